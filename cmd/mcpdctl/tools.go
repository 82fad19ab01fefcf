package main

import (
	"context"
	"fmt"
	"text/tabwriter"
)

var toolsCmd = &command{
	name:     "tools",
	synopsis: "[NAME] [--json]",
	short:    "list the tools of one server, or of all servers",
	long: `--json prints a JSON array of the MCP Tool objects as the servers sent them,
each with a "server" member added.`,
	maxArgs:  1,
	setup:    listSetup("print a JSON array of Tool objects", runTools),
	complete: completeServerArg,
}

func runTools(ctx context.Context, c *cli, a listArgs) error {
	ctx, lc, err := c.startList(ctx, a)
	if err != nil {
		return err
	}
	lists, err := lc.list(ctx, "tools/list", "tools")
	if err != nil {
		return err
	}
	if lc.asJSON {
		return printItemsJSON(c.stdout, lists)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tDESCRIPTION")
	for server, it := range allItems(lists) {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", sanitize(server), sanitize(it.Name), it.describe())
	}
	return tw.Flush()
}
