package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The daemon links no test support and no benchmark: nothing under
// internal/testing, no test-only package and not the bench.
func TestDepsHaveNoTestSupport(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/mcpd-dev/mcpd/internal/supervisor") {
		t.Fatalf("go list -deps gave an implausible list: %q", deps)
	}
	const own = "github.com/mcpd-dev/mcpd/"
	for _, d := range deps {
		rel, ok := strings.CutPrefix(d, own)
		if !ok {
			continue
		}
		if strings.HasPrefix(rel, "internal/testing/") || rel == "bench" || strings.HasSuffix(rel, "/e2e") || strings.Contains(rel, "/testdata/") {
			t.Errorf("mcpd links %s, which is test support", d)
		}
	}
}
