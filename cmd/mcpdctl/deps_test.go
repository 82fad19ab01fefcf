package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// forbiddenDeps are the packages mcpdctl must never link: it talks to mcpd
// over gRPC and the bridge socket, never with the daemon's runtime
// (docs/architecture.md).
var forbiddenDeps = []string{
	"github.com/mcpd-dev/mcpd/internal/supervisor",
	"github.com/mcpd-dev/mcpd/internal/session",
	"github.com/mcpd-dev/mcpd/internal/transport",
	"github.com/mcpd-dev/mcpd/internal/api",
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp",
}

// allowedOwnDeps are the only packages of this module mcpdctl may import.
var allowedOwnDeps = map[string]bool{
	"github.com/mcpd-dev/mcpd/cmd/mcpdctl":      true,
	"github.com/mcpd-dev/mcpd/proto/mcpd/v1":    true,
	"github.com/mcpd-dev/mcpd/internal/paths":   true,
	"github.com/mcpd-dev/mcpd/internal/version": true,
	// internal/jsonrpc is the wire vocabulary, standard library only.
	"github.com/mcpd-dev/mcpd/internal/jsonrpc": true,
	// internal/service is the in-process service's vocabulary (plain Go
	// values of requests and answers), standard library and jsonrpc only:
	// the bridge mcpdctl carries speaks it.
	"github.com/mcpd-dev/mcpd/internal/service": true,
	// internal/apiconv converts between mcpd.v1 and the service's plain
	// values: the contract, service and jsonrpc only.
	"github.com/mcpd-dev/mcpd/internal/apiconv": true,
	// internal/bridgegrpc is the bridge's Backend over the gRPC socket:
	// gRPC, the contract, apiconv and the bridge.
	"github.com/mcpd-dev/mcpd/internal/bridgegrpc": true,
	// internal/config is the config schema and validator, importing only
	// the standard library and fsnotify: "config check" validates a file
	// when mcpd is not running with the very code mcpd uses, rather than a
	// copy that would drift. It links nothing of the daemon's runtime.
	"github.com/mcpd-dev/mcpd/internal/config": true,
	// internal/hosts knows the MCP hosts' config files (connect,
	// disconnect, hosts): format-preserving editors, nothing of the daemon.
	"github.com/mcpd-dev/mcpd/internal/hosts": true,
	// internal/importer turns other hosts' servers into mcpd's (config
	// import, connect's plan): the config, hosts and secrets packages and
	// hujson, nothing of the daemon.
	"github.com/mcpd-dev/mcpd/internal/importer": true,
	// internal/sandbox/policy is the config's sandbox vocabulary, standard
	// library only (not the helper of internal/sandbox).
	"github.com/mcpd-dev/mcpd/internal/sandbox/policy": true,
	// internal/audit is the audit log's record format and reader, standard
	// library and internal/rawio only: "mcpdctl audit" reads the file mcpd
	// writes.
	"github.com/mcpd-dev/mcpd/internal/audit": true,
	// internal/rawio reads and writes non-blocking descriptors with raw
	// system calls; x/sys only.
	"github.com/mcpd-dev/mcpd/internal/rawio": true,
	// internal/cpuprofile writes a CPU profile for the benchmarks: standard
	// library only.
	"github.com/mcpd-dev/mcpd/internal/cpuprofile": true,
	// internal/docgen keeps the generated sections of docs/ (the verb
	// table): standard library only.
	"github.com/mcpd-dev/mcpd/internal/docgen": true,
	// internal/apiclient dials mcpd's socket and sets the request
	// metadata of its calls: gRPC and proto/mcpd/v1 only.
	"github.com/mcpd-dev/mcpd/internal/apiclient": true,
	// internal/bridge is the MCP server behind "mcpdctl bridge"; its own
	// TestDeps holds it to the packages above.
	"github.com/mcpd-dev/mcpd/internal/bridge": true,
	// internal/profile is the profiles' types and globs, no runtime.
	"github.com/mcpd-dev/mcpd/internal/profile": true,
	// internal/relay relays a host's bytes to mcpd's bridge socket, with
	// the bridge and the wire vocabulary only.
	"github.com/mcpd-dev/mcpd/internal/relay": true,
	// internal/pollio opens the bridge's stdin for the poller; x/sys only.
	"github.com/mcpd-dev/mcpd/internal/pollio": true,
	// internal/registry is the MCP Registry client and the server.json
	// conversion behind search, add and outdated: net/http, the standard
	// library and nothing of the daemon.
	"github.com/mcpd-dev/mcpd/internal/registry": true,
	// internal/secrets keeps the ${secret:NAME} values "mcpdctl secret"
	// sets (Secret Service over godbus, or a 0600 file); paths only.
	"github.com/mcpd-dev/mcpd/internal/secrets": true,
}

// checkDeps returns the packages in deps that mcpdctl must not depend on.
func checkDeps(deps []string) []string {
	var bad []string
	for _, d := range deps {
		forbidden := false
		for _, f := range forbiddenDeps {
			if d == f || strings.HasPrefix(d, f+"/") {
				forbidden = true
			}
		}
		if forbidden || (strings.HasPrefix(d, "github.com/mcpd-dev/mcpd/") && !allowedOwnDeps[d]) {
			bad = append(bad, d)
		}
	}
	return bad
}

func TestCheckDeps(t *testing.T) {
	got := checkDeps([]string{
		"fmt", "google.golang.org/grpc", "github.com/mcpd-dev/mcpd/internal/paths",
		"github.com/mcpd-dev/mcpd/internal/supervisor", "github.com/mcpd-dev/mcpd/internal/cache",
		"github.com/mcpd-dev/mcpd/internal/testing/fakemcp/x",
	})
	want := []string{
		"github.com/mcpd-dev/mcpd/internal/supervisor", "github.com/mcpd-dev/mcpd/internal/cache",
		"github.com/mcpd-dev/mcpd/internal/testing/fakemcp/x",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checkDeps (-want +got):\n%s", diff)
	}
}

// TestDeps enforces the import rule on the real build graph:
// go list -deps ./cmd/mcpdctl contains none of the daemon's packages.
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 || !containsString(deps, "github.com/mcpd-dev/mcpd/proto/mcpd/v1") {
		t.Fatalf("go list -deps gave an implausible list: %q", deps)
	}
	if bad := checkDeps(deps); len(bad) > 0 {
		t.Errorf("mcpdctl depends on packages it must not import: %q", bad)
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
