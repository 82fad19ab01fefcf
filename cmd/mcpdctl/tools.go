package main

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var toolsCmd = &command{
	name:     "tools",
	synopsis: "[NAME] [--json]",
	short:    "list the tools of one server, or of all servers",
	long: `--json prints a JSON array of the MCP Tool objects as the servers sent them,
each with a "server" member added.`,
	run: runTools,
}

func runTools(ctx context.Context, c *cli, cmd *command, args []string) error {
	fs := c.flags(cmd)
	asJSON := fs.Bool("json", false, "print a JSON array of Tool objects")
	timeout := timeoutFlag(fs, 60*time.Second)
	pos, err := c.parseArgs(cmd, fs, args, 0, 1)
	if err != nil {
		return err
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
	}
	ctx, cancel := c.withTimeout(ctx, *timeout)
	defer cancel()
	client, err := c.connect()
	if err != nil {
		return err
	}
	resp, err := client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: name, Options: c.callOptions()})
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	lists, err := c.gatherLists("tools", name, resp.GetServers(), nil, false)
	if err != nil {
		return err
	}
	if *asJSON {
		items, err := itemsJSON(lists)
		if err != nil {
			return err
		}
		return writeJSON(c.stdout, items)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tDESCRIPTION")
	for _, l := range lists {
		for _, raw := range l.items {
			it := decodeItem(raw)
			fmt.Fprintf(tw, "%s\t%s\t%s\n", l.server, it.Name, it.describe())
		}
	}
	return tw.Flush()
}
