package main

import (
	"context"
	"errors"
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
func (c *cli) missingTool(ctx context.Context, _ mcpdv1.McpdClient, server, tool string) error {
	return c.missingItem(ctx, "tools/list", "tool", server, tool)
}

// missingPrompt is missingTool for a prompt.
func (c *cli) missingPrompt(ctx context.Context, server, prompt string) error {
	return c.missingItem(ctx, "prompts/list", "prompt", server, prompt)
}

// missingItem returns the error for name, which server does not list for
// method, or nil when it does or the list cannot be had.
func (c *cli) missingItem(ctx context.Context, method, kind, server, name string) error {
	names := c.itemNames(ctx, method, server, "name")
	if names == nil {
		if _, err := c.listItems(ctx, method, server); err != nil {
			return nil
		}
	}
	if slices.Contains(names, name) {
		return nil
	}
	return notFound(kind, server, name, names)
}

// toolNotFound says tool is not among names, server's tools: with the
// closest name when one is a likely misspelling, else the names themselves.
func toolNotFound(server, tool string, names []string) error {
	return notFound("tool", server, tool, names)
}

// notFound says the kind ("tool", "prompt") name is not among names,
// server's: with the closest name when one is a likely misspelling, else the
// names themselves.
func notFound(kind, server, name string, names []string) error {
	msg := fmt.Sprintf("%s %q not found on server %q", kind, name, server)
	if best := closestName(name, names); best != "" {
		return fmt.Errorf("%s; did you mean %q?", msg, best)
	}
	if len(names) == 0 {
		return fmt.Errorf("%s (it has no %ss)", msg, kind)
	}
	sorted := slices.Sorted(slices.Values(names))
	more := ""
	if len(sorted) > maxToolsNamed {
		more = fmt.Sprintf(", and %d more (see: mcpdctl %ss %s)", len(sorted)-maxToolsNamed, kind, server)
		sorted = sorted[:maxToolsNamed]
	}
	return fmt.Errorf("%s (it has: %s%s)", msg, strings.Join(sorted, ", "), more)
}

// noSuchServer is the error for a server mcpd does not have, with the
// closest configured name when it looks like a misspelling.
func (c *cli) noSuchServer(ctx context.Context, server string) error {
	msg := fmt.Sprintf("no such server %q", server)
	if best := closestName(server, c.serverNames(ctx)); best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return errors.New(msg)
}

// closestName returns the name in names nearest to want when it is a likely
// misspelling (the same ignoring case, "_" and "-", or at most a third of
// its letters, and at most two, edited away), else "".
func closestName(want string, names []string) string {
	return config.Closest(want, names, min(2, max(1, len(want)/3)))
}
