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
each with a "server" member added.

--profile NAME shows what a host under that profile of the config sees
("mcpdctl bridge --profile NAME", /profiles/NAME/mcp): only the tools it
shows, with its title and description overrides, under the names the host
gets (its prefix mode), and the estimated token count of that tools list
beside the count without the profile. The estimate is the length of the
JSON tools/list result in bytes divided by 4, rounded up: a common rule of
thumb for English text and JSON, not any model's tokenizer.`,
	maxArgs:  1,
	setup:    listSetup("print a JSON array of Tool objects", runTools),
	complete: completeServerArg,
}

func runTools(ctx context.Context, c *cli, a listArgs) error {
	if a.profile != "" {
		return runToolsProfile(ctx, c, a)
	}
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
