package main

import (
	"io"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/docgen"
)

// verbTable is docs/mcpdctl.md's table of the verbs and their flags, made
// from the same declarations as the help and the man pages.
func verbTable() string {
	c := &cli{stdout: io.Discard, stderr: io.Discard}
	root := c.newRoot()
	byName := map[string]*pflag.FlagSet{}
	for _, cc := range root.Commands() {
		byName[cc.Name()] = cc.NonInheritedFlags()
	}
	var rows [][]string
	for _, cmd := range append(commands[:len(commands):len(commands)], completionCmd) {
		if cmd.hidden {
			continue
		}
		var flags []string
		byName[cmd.name].VisitAll(func(f *pflag.Flag) {
			if shownFlag(f) {
				name, _ := flagSynopsis(f)
				flags = append(flags, docgen.Code(name))
			}
		})
		rows = append(rows, []string{docgen.Code(strings.TrimPrefix(usageLine(cmd), "mcpdctl [--socket PATH] ")), cmd.short, strings.Join(flags, ", ")})
	}
	return docgen.Table([]string{"verb", "does", "flags"}, rows)
}

// TestVerbTableCurrent fails when docs/mcpdctl.md's verb table is not what
// the verbs' declarations make (make docs rewrites it).
func TestVerbTableCurrent(t *testing.T) {
	if err := docgen.Sync("../../docs/mcpdctl.md", "verbs", verbTable(), *update); err != nil {
		t.Error(err)
	}
}
