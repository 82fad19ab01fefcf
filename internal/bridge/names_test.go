package bridge

import (
	"strings"
	"testing"
)

func TestPrefixedNames(t *testing.T) {
	if got := prefixed("github", "search"); got != "github__search" {
		t.Errorf("short name = %q", got)
	}
	exact := strings.Repeat("n", maxToolName-len("s__"))
	if got := prefixed("s", exact); got != "s__"+exact {
		t.Errorf("a name of exactly %d characters was changed: %q", maxToolName, got)
	}
	long := strings.Repeat("n", 200)
	a, b := prefixed("a", long), prefixed("a", long+"x")
	for _, n := range []string{a, b} {
		if len(n) != maxToolName || !strings.HasPrefix(n, "a__nnn") {
			t.Errorf("shortened name %q (%d characters)", n, len(n))
		}
	}
	if a == b {
		t.Errorf("two long names sharing their first %d characters both became %q", maxToolName, a)
	}
	if prefixed("a", long) != a {
		t.Error("shortening is not deterministic")
	}
	// The same server__name spelled by two servers is the same exposed
	// name, shortened or not: the bridge refuses it at start-up
	// (TestBridgeAggregationClashAtStartup in internal/testing/e2e).
	if prefixed("x_", "_"+long) != prefixed("x", "__"+long) || prefixed("x_", "_t") != prefixed("x", "__t") {
		t.Error("names spelling the same server__name differ")
	}
}
