package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/config"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// maxToolsNamed is how many of a server's tools a "not found" error lists.
const maxToolsNamed = 10

// missingTool returns the error for a call to a tool that server does not
// list, or nil when it lists it or its list cannot be had (the server's own
// answer then stands). mcpd caches the list, so asking is cheap; it is asked
// only after the server answered the call with an error.
func (c *cli) missingTool(ctx context.Context, client mcpdv1.McpdClient, server, tool string) error {
	lists, err := client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: server, Options: c.callOptions()})
	if err != nil || len(lists.GetServers()) != 1 {
		return nil
	}
	l := lists.GetServers()[0]
	if l.GetError() != nil || l.GetUnavailable() != "" {
		return nil
	}
	var tools []struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(l.GetItemsJson()), &tools); err != nil {
		return nil
	}
	names := make([]string, 0, len(tools))
	for _, t := range tools {
		names = append(names, t.Name)
	}
	if slices.Contains(names, tool) {
		return nil
	}
	return toolNotFound(server, tool, names)
}

// toolNotFound says tool is not among names, server's tools: with the
// closest name when one is a likely misspelling, else the names themselves.
func toolNotFound(server, tool string, names []string) error {
	msg := fmt.Sprintf("tool %q not found on server %q", tool, server)
	if best := closestName(tool, names); best != "" {
		return fmt.Errorf("%s; did you mean %q?", msg, best)
	}
	if len(names) == 0 {
		return fmt.Errorf("%s (it has no tools)", msg)
	}
	sorted := slices.Sorted(slices.Values(names))
	more := ""
	if len(sorted) > maxToolsNamed {
		more = fmt.Sprintf(", and %d more (see: mcpdctl tools %s)", len(sorted)-maxToolsNamed, server)
		sorted = sorted[:maxToolsNamed]
	}
	return fmt.Errorf("%s (it has: %s%s)", msg, strings.Join(sorted, ", "), more)
}

// closestName returns the name in names nearest to want when it is a likely
// misspelling (the same ignoring case, "_" and "-", or at most a third of
// its letters, and at most two, edited away), else "".
func closestName(want string, names []string) string {
	return config.Closest(want, names, min(2, max(1, len(want)/3)))
}

// looksLikeUnknownTool reports whether the text of an isError result reads
// like a server's "no such tool" answer rather than the tool's own failure.
func looksLikeUnknownTool(res toolResult) bool {
	for _, block := range res.Content {
		var b struct {
			Text string `json:"text"`
		}
		if json.Unmarshal(block, &b) != nil {
			continue
		}
		t := strings.ToLower(b.Text)
		if strings.Contains(t, "tool") && (strings.Contains(t, "unknown") || strings.Contains(t, "not found") ||
			strings.Contains(t, "no such") || strings.Contains(t, "does not exist")) {
			return true
		}
	}
	return false
}
