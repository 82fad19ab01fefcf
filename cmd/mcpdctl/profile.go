package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/mcpd-dev/mcpd/internal/apiconv"
	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/profile"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// estimateTokens is the estimated token count of a host's tools/list
// result holding tools: its compact JSON length in bytes divided by 4,
// rounded up (a rule of thumb for English text and JSON; no tokenizer).
func estimateTokens(tools []json.RawMessage) (int, error) {
	if tools == nil {
		tools = []json.RawMessage{}
	}
	data, err := json.Marshal(map[string]any{"tools": tools})
	if err != nil {
		return 0, fmt.Errorf("encode tools list: %w", err)
	}
	return (len(data) + 3) / 4, nil
}

// profileView is what "mcpdctl tools --profile" reports.
type profileView struct {
	Profile string            `json:"profile"`
	Prefix  string            `json:"prefix"`
	Servers []string          `json:"servers"`
	Tools   []json.RawMessage `json:"tools"`
	Tokens  int               `json:"tokens"`
	// Without is the same list without any profile (every enabled server,
	// or the one named, prefixed as always).
	Without struct {
		Tools  int `json:"tools"`
		Tokens int `json:"tokens"`
	} `json:"without_profile"`
}

// runToolsProfile lists the tools as a host under a.profile sees them.
func runToolsProfile(ctx context.Context, c *cli, a listArgs) error {
	pctx, lc, err := c.startList(ctx, a)
	if err != nil {
		return err
	}
	servers, err := lc.client.ListServers(pctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		return c.rpcError(pctx, err, a.server)
	}
	mode, _ := profile.ParsePrefix(servers.GetProfile().GetPrefix())
	view := profileView{Profile: a.profile, Prefix: string(mode), Servers: servers.GetProfile().GetServers()}
	aggr := a.server == ""
	lists, err := lc.fetch(pctx, "tools/list")
	if err != nil {
		return err
	}
	if view.Tools, err = bridge.HostTools(apiconv.ServerListsOf(lists), aggr, mode); err != nil {
		return err
	}
	if view.Tokens, err = estimateTokens(view.Tools); err != nil {
		return err
	}
	// The same list without the profile, for comparison.
	plain := listArgs{server: a.server, timeout: a.timeout}
	octx, olc, err := c.startList(ctx, plain)
	if err != nil {
		return err
	}
	all, err := olc.fetch(octx, "tools/list")
	if err != nil {
		return err
	}
	allTools, err := bridge.HostTools(apiconv.ServerListsOf(all), aggr, profile.PrefixAlways)
	if err != nil {
		return err
	}
	view.Without.Tools = len(allTools)
	if view.Without.Tokens, err = estimateTokens(allTools); err != nil {
		return err
	}
	if a.asJSON {
		return writeJSON(c.stdout, view)
	}
	return printProfileView(c, view)
}

func printProfileView(c *cli, view profileView) error {
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tDESCRIPTION")
	for _, raw := range view.Tools {
		it := decodeItem(raw)
		fmt.Fprintf(tw, "%s\t%s\n", sanitize(it.Name), it.describe())
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	saved := ""
	if view.Without.Tokens > 0 && view.Tokens <= view.Without.Tokens {
		saved = fmt.Sprintf(", %d%% fewer", 100-100*view.Tokens/view.Without.Tokens)
	}
	fmt.Fprintf(c.stdout, "\nprofile %q (prefix %s): %d tools, ~%d tokens; without a profile: %d tools, ~%d tokens%s\n",
		sanitize(view.Profile), view.Prefix, len(view.Tools), view.Tokens, view.Without.Tools, view.Without.Tokens, saved)
	return nil
}
