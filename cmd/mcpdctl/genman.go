package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/version"
)

var genManCmd = &command{
	name:     "gen-man",
	synopsis: "DIR",
	short:    "write the man pages (mcpdctl.1, mcpdctl-VERB.1) into DIR",
	long: `Writes one roff man page for mcpdctl and one for each verb, made from the
same declarations as the help. "make man" runs it.`,
	hidden:  true,
	minArgs: 1,
	maxArgs: 1,
	setup: func(*pflag.FlagSet) runFunc {
		return func(_ context.Context, c *cli, _ *command, args []string) error {
			return c.genMan(args[0])
		}
	},
	complete: func(context.Context, *cli, []string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	},
}

// genMan writes the man pages into dir.
func (c *cli) genMan(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	pages := map[string]func(io.Writer){"mcpdctl.1": c.writeTopMan}
	for _, cc := range c.root.Commands() {
		if !cc.Hidden && cc.Name() != "help" {
			pages["mcpdctl-"+cc.Name()+".1"] = func(w io.Writer) { c.writeVerbMan(w, cc) }
		}
	}
	for name, write := range pages {
		var b strings.Builder
		write(&b)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("man pages: %w", err)
		}
	}
	fmt.Fprintf(c.stdout, "wrote %d man pages to %s\n", len(pages), dir)
	return nil
}

func manHeader(w io.Writer, title, what string) {
	fmt.Fprintf(w, ".TH %s 1 \"\" \"mcpdctl %s\" \"mcpd manual\"\n", roff(strings.ToUpper(title)), roff(version.Version))
	fmt.Fprintf(w, ".SH NAME\n%s \\- %s\n", roff(title), roff(what))
}

func (c *cli) writeTopMan(w io.Writer) {
	manHeader(w, "mcpdctl", c.root.Short)
	fmt.Fprint(w, ".SH SYNOPSIS\n.B mcpdctl\n[\\-\\-socket \\fIPATH\\fR] \\fIVERB\\fR [\\fIflags\\fR] [\\fIarguments\\fR]\n")
	fmt.Fprintf(w, ".SH DESCRIPTION\n%s\n.SH VERBS\n", roffText(c.root.Long))
	var seeAlso []string
	for _, cc := range c.root.Commands() {
		if cc.Hidden || cc.Name() == "help" {
			continue
		}
		fmt.Fprintf(w, ".TP\n.B %s\n%s\n", roff(cc.Name()), roff(cc.Short))
		seeAlso = append(seeAlso, fmt.Sprintf(".BR mcpdctl\\-%s (1)", roff(cc.Name())))
	}
	fmt.Fprint(w, ".SH GLOBAL OPTIONS\n")
	manFlags(w, c.root.LocalFlags())
	fmt.Fprint(w, ".SH EXIT STATUS\n0 on success, 1 when the command failed, 2 for a wrong command line, 130 when interrupted (Ctrl\\-C).\n")
	fmt.Fprintf(w, ".SH SEE ALSO\n.BR mcpd (1),\n%s\n", strings.Join(seeAlso, ",\n"))
}

func (c *cli) writeVerbMan(w io.Writer, cc *cobra.Command) {
	manHeader(w, "mcpdctl-"+cc.Name(), cc.Short)
	fmt.Fprintf(w, ".SH SYNOPSIS\n.B mcpdctl\n[\\-\\-socket \\fIPATH\\fR] %s\n", roff(cc.Use))
	fmt.Fprintf(w, ".SH DESCRIPTION\n%s.\n", roff(capitalize(cc.Short)))
	if cc.Long != "" {
		fmt.Fprintf(w, ".PP\n%s\n", roffText(cc.Long))
	}
	if hasFlags(cc.NonInheritedFlags()) {
		fmt.Fprint(w, ".SH OPTIONS\n")
		manFlags(w, cc.NonInheritedFlags())
	}
	fmt.Fprint(w, ".SH GLOBAL OPTIONS\n")
	manFlags(w, cc.InheritedFlags())
	fmt.Fprint(w, ".SH SEE ALSO\n.BR mcpdctl (1)\n")
}

func manFlags(w io.Writer, fs *pflag.FlagSet) {
	fs.VisitAll(func(f *pflag.Flag) {
		if shownFlag(f) {
			name, usage := flagSynopsis(f)
			fmt.Fprintf(w, ".TP\n\\fB%s\\fR\n%s\n", roff(name), roff(usage))
		}
	})
}

// roffText is text for a paragraph: lines indented in the help (examples)
// are kept as they are, the rest is filled.
func roffText(s string) string {
	var b strings.Builder
	literal := false
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		indented := strings.HasPrefix(line, "  ")
		switch {
		case indented && !literal:
			b.WriteString(".nf\n")
		case !indented && literal:
			b.WriteString(".fi\n")
		}
		literal = indented
		if line == "" {
			b.WriteString(".PP\n")
			continue
		}
		b.WriteString(roff(line) + "\n")
	}
	if literal {
		b.WriteString(".fi\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// roff escapes s for roff: backslashes, dashes, and a leading control
// character.
func roff(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	s = strings.ReplaceAll(s, "-", `\-`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
