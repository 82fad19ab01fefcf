package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// helpFunc prints the help of cc: the top-level help for the root, else
// the verb's. Both the help and the man pages (genman.go) are made from
// the command tree.
func (c *cli) helpFunc(cc *cobra.Command, _ []string) {
	if cc == c.root || cc.Parent() == nil {
		c.printTopHelp(c.stdout)
		return
	}
	c.printVerbHelp(c.stdout, cc)
}

// helpCommand is "mcpdctl help [VERB]".
func (c *cli) helpCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "help [VERB]",
		Short: "show this help, or a verb's help",
		Args:  cobra.ArbitraryArgs,
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return visibleVerbs(c.root), cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(_ *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				c.printTopHelp(c.stdout)
				return errHelpShown
			case len(args) > 1:
				return &usageError{msg: "help takes at most one verb"}
			}
			target := verbCommand(c.root, args[0])
			if target == nil {
				return unknownVerb(args[0])
			}
			c.printVerbHelp(c.stdout, target)
			return errHelpShown
		},
	}
}

// verbCommand returns root's verb of that name, or nil.
func verbCommand(root *cobra.Command, name string) *cobra.Command {
	for _, cc := range root.Commands() {
		if cc.Name() == name {
			return cc
		}
	}
	return nil
}

// visibleVerbs are the names of the verbs the help lists.
func visibleVerbs(root *cobra.Command) []string {
	var names []string
	for _, cc := range root.Commands() {
		if !cc.Hidden {
			names = append(names, cc.Name())
		}
	}
	return names
}

func (c *cli) printTopHelp(w io.Writer) {
	fmt.Fprint(w, `mcpdctl controls mcpd, the daemon that supervises local MCP servers.

Usage:
  mcpdctl [--socket PATH] VERB [flags] [arguments]

Verbs:
`)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, cc := range c.root.Commands() {
		if !cc.Hidden && cc.Name() != "help" {
			fmt.Fprintf(tw, "  %s\t%s\n", cc.Name(), cc.Short)
		}
	}
	fmt.Fprintf(tw, "  %s\t%s\n", "help", "show this help, or a verb's help")
	tw.Flush()
	fmt.Fprint(w, "\nGlobal flags (before or after the verb):\n")
	printFlags(w, c.root.Flags())
	fmt.Fprint(w, "\nRun 'mcpdctl VERB --help' for a verb's flags and arguments.\n")
}

func (c *cli) printVerbHelp(w io.Writer, cc *cobra.Command) {
	fmt.Fprintf(w, "usage: mcpdctl [--socket PATH] %s\n\n%s.\n", cc.Use, capitalize(cc.Short))
	if cc.Long != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(cc.Long))
	}
	if hasFlags(cc.NonInheritedFlags()) {
		fmt.Fprint(w, "\nFlags:\n")
		printFlags(w, cc.NonInheritedFlags())
	}
	fmt.Fprint(w, "\nGlobal flags:\n")
	printFlags(w, cc.InheritedFlags())
}

// hasFlags reports whether fs has a flag printFlags prints.
func hasFlags(fs *pflag.FlagSet) bool {
	has := false
	fs.VisitAll(func(f *pflag.Flag) { has = has || shownFlag(f) })
	return has
}

// shownFlag reports whether the help lists f: -h/--help goes without saying.
func shownFlag(f *pflag.Flag) bool { return f.Name != "help" && !f.Hidden }

// printFlags prints the flags of fs, GNU style.
func printFlags(w io.Writer, fs *pflag.FlagSet) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fs.VisitAll(func(f *pflag.Flag) {
		if !shownFlag(f) {
			return
		}
		name, usage := flagSynopsis(f)
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	})
	tw.Flush()
}

// flagSynopsis returns how the help names f ("-n, --lines N") and what it
// says about it, with its default when that is not the zero value.
func flagSynopsis(f *pflag.Flag) (name, usage string) {
	arg, usage := pflag.UnquoteUsage(f)
	if arg == "bool" || f.NoOptDefVal != "" {
		arg = ""
	}
	name = "--" + f.Name
	if f.Shorthand != "" {
		name = "-" + f.Shorthand + ", " + name
	}
	if arg != "" {
		name += " " + arg
	}
	if !isZeroDefault(f) {
		usage += fmt.Sprintf(" (default %s)", f.DefValue)
	}
	return name, usage
}

func isZeroDefault(f *pflag.Flag) bool {
	switch f.DefValue {
	case "", "0", "false", "0s", "[]":
		return true
	}
	return false
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
