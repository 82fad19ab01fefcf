package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
)

var promptsCmd = &command{
	name:     "prompts",
	synopsis: "[NAME] [--json]",
	short:    "list the prompts of one server, or of all servers",
	long: `ARGUMENTS marks required arguments with *. --json prints a JSON array of the
MCP Prompt objects as the servers sent them, each with a "server" member added.`,
	maxArgs:  1,
	setup:    listSetup("print a JSON array of Prompt objects", runPrompts),
	complete: completeServerArg,
}

func runPrompts(ctx context.Context, c *cli, a listArgs) error {
	ctx, lc, err := c.startList(ctx, a)
	if err != nil {
		return err
	}
	lists, err := lc.list(ctx, "prompts/list", "prompts")
	if err != nil {
		return err
	}
	if lc.asJSON {
		return printItemsJSON(c.stdout, lists)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tPROMPT\tARGUMENTS\tDESCRIPTION")
	for server, it := range allItems(lists) {
		var argNames []string
		for _, a := range it.Arguments {
			n := a.Name
			if a.Required {
				n += "*"
			}
			argNames = append(argNames, n)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sanitize(server), sanitize(it.Name), dash(strings.Join(argNames, ",")), it.describe())
	}
	return tw.Flush()
}
