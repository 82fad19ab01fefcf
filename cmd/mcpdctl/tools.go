package main

import (
	"context"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/pflag"
)

var toolsCmd = &command{
	name:     "tools",
	synopsis: "[NAME] [--json] | diff NAME | approve NAME [TOOL...]",
	short:    "list the tools of one server, or of all servers; review and approve changed tools",
	long: `--json prints a JSON array of the MCP Tool objects as the servers sent them,
each with a "server" member added.

--profile NAME shows what a host under that profile of the config sees
("mcpdctl bridge --profile NAME", /profiles/NAME/mcp): only the tools it
shows, with its title and description overrides, under the names the host
gets (its prefix mode), and the estimated token count of that tools list
beside the count without the profile. The estimate is the length of the
JSON tools/list result in bytes divided by 4, rounded up: a common rule of
thumb for English text and JSON, not any model's tokenizer.

mcpd pins each server's tool definitions (name, title, description, input and
output schema, annotations) the first time it sees them. "tools diff NAME"
shows how the tools NAME lists now differ from the pinned ones; "tools approve
NAME [TOOL...]" accepts the current definitions of those tools (all of them
when none is named). With "pin": "enforce" in the server's config, changed
and new tools are withheld from every app until approved.`,
	maxArgs:  -1,
	setup:    toolsSetup,
	complete: completeServerArg,
}

// toolsSetup dispatches "tools diff", "tools approve" and the tools list.
func toolsSetup(fs *pflag.FlagSet) runFunc {
	list := listSetup("print a JSON array of Tool objects (diff: the changes as JSON)", runTools)(fs)
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		switch {
		case len(args) >= 2 && args[0] == "diff":
			if len(args) > 2 {
				return &usageError{cmd: cmd, msg: "tools diff takes one server NAME"}
			}
			asJSON, _ := fs.GetBool("json")
			return c.runToolsDiff(ctx, args[1], asJSON)
		case len(args) >= 2 && args[0] == "approve":
			return c.runToolsApprove(ctx, args[1], args[2:])
		case len(args) > 1:
			return &usageError{cmd: cmd, msg: fmt.Sprintf("unknown subcommand %q (want diff or approve)", args[0])}
		}
		return list(ctx, c, cmd, args)
	}
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
