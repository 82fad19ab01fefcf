package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// gen-man writes a page for mcpdctl and for each verb, from the same
// declarations as the help.
func TestGenMan(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man")
	r := mcpdctl(t, "gen-man", dir)
	if r.code != exitOK {
		t.Fatalf("gen-man: exit %d: %s", r.code, r.stderr)
	}
	top, err := os.ReadFile(filepath.Join(dir, "mcpdctl.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range append(commands, completionCmd) {
		if !strings.Contains(string(top), ".B "+roff(cmd.name)+"\n") {
			t.Errorf("mcpdctl.1 does not list %s", cmd.name)
		}
		page, err := os.ReadFile(filepath.Join(dir, "mcpdctl-"+cmd.name+".1"))
		if err != nil {
			t.Error(err)
			continue
		}
		for _, want := range []string{".TH MCPDCTL\\-" + strings.ToUpper(roff(cmd.name)) + " 1", roff(capitalize(cmd.short)), "\\-\\-socket"} {
			if !strings.Contains(string(page), want) {
				t.Errorf("mcpdctl-%s.1 lacks %q", cmd.name, want)
			}
		}
	}
	logs, _ := os.ReadFile(filepath.Join(dir, "mcpdctl-logs.1"))
	if !strings.Contains(string(logs), `\fB\-n, \-\-lines N\fR`) {
		t.Errorf("mcpdctl-logs.1 does not describe -n:\n%s", logs)
	}
	if h := mcpdctl(t, "--help"); strings.Contains(h.stdout, "gen-man") {
		t.Error("the help lists the hidden gen-man")
	}
}
