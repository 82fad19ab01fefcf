package bridge

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ownDeps are the only packages of this module the bridge may import: it
// reaches mcpd through a Backend, never the daemon's own packages, so that
// mcpdctl can link it.
var ownDeps = map[string]bool{
	"github.com/mcpd-dev/mcpd/internal/bridge":  true,
	"github.com/mcpd-dev/mcpd/internal/jsonrpc": true,
	// The in-process service's vocabulary: standard library and jsonrpc.
	"github.com/mcpd-dev/mcpd/internal/service": true,
	// (No gRPC and no mcpd.v1: internal/bridgegrpc speaks them for it.)
	"github.com/mcpd-dev/mcpd/internal/version": true,
	"github.com/mcpd-dev/mcpd/internal/config":  true,
	"github.com/mcpd-dev/mcpd/internal/profile": true,
	// The config's sandbox vocabulary: standard library only.
	"github.com/mcpd-dev/mcpd/internal/sandbox/policy": true,
}

// TestDeps enforces the import rule on the real build graph: go list -deps
// of the bridge names no other package of this module (in particular not
// supervisor, session, transport or api).
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/mcpd-dev/mcpd/internal/jsonrpc") {
		t.Fatalf("go list -deps gave an implausible list: %q", deps)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/mcpd-dev/mcpd/") && !ownDeps[d] {
			t.Errorf("internal/bridge depends on %s", d)
		}
	}
}
