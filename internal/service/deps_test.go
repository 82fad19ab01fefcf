package service

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mcpd-dev/mcpd/"

// grpcAllowed are the packages that may depend on gRPC or mcpd's own
// protocol buffers (proto/mcpd/v1), and why; every other package of the
// module, the domain below the service in particular, depends on neither.
var grpcAllowed = map[string]string{
	"cmd/mcpd":            "serves the gRPC socket",
	"cmd/mcpdctl":         "a gRPC client of mcpd",
	"bench":               "measures the gRPC door",
	"proto/mcpd/v1":       "the generated contract",
	"internal/api":        "the adapter: the gRPC service on the in-process one",
	"internal/apiconv":    "the conversions between mcpd.v1 and the service's plain values, for both sides of the socket",
	"internal/apiclient":  "the client side of the gRPC socket: dial options and request metadata of every connection to mcpd",
	"internal/bridge":     "reads mcpd.v1's error reasons and gRPC status codes of a failed call (rpcerror.go, withheld.go); its Backend is plain values",
	"internal/bridgegrpc": "the bridge's Backend over mcpd's gRPC socket",
	"internal/httpface":   "the bridge's in-process Backend over api.Server (api.LocalApp), the adapter that links gRPC; its errors are gRPC statuses",
	"internal/bridgeface": "runs the bridge over the HTTP face's backend",
	"internal/relay":      "takes the bridge socket's header and warning marker from internal/bridge, which reads mcpd.v1's error reasons",
	"internal/dashboard":  "links the adapter it calls in process (api.LocalApp, in the service's plain values) and the HTTP face and bridge it streams through; its own code is proto-free but for errclass.go, which reads the class of the service's errors from their gRPC status",
	"internal/tracing":    "the OTLP exporter speaks gRPC; carries trace context in gRPC metadata",

	// Test support.
	"internal/testing/mcpdtest": "serves mcpd's gRPC API, a real mcpd's or a test's own, on a Unix socket",
}

// TestImportRules enforces the import rules on the real build graph: only
// the packages of grpcAllowed depend on gRPC or mcpd.v1, and the service's
// vocabulary depends on nothing of the module but jsonrpc.
func TestImportRules(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}:{{join .Deps \" \"}}", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, ":")
		name := strings.TrimPrefix(pkg, module)
		seen++
		for _, d := range strings.Fields(deps) {
			rpc := strings.HasPrefix(d, "google.golang.org/grpc") || d == module+"proto/mcpd/v1"
			if rpc && grpcAllowed[name] == "" {
				t.Errorf("%s depends on %s: only the adapter and the faces built on mcpd.v1 may", name, d)
				break
			}
			if name == "internal/service" && strings.HasPrefix(d, module) && d != module+"internal/jsonrpc" {
				t.Errorf("internal/service depends on %s: it is standard library and jsonrpc only", d)
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list named %d packages: implausible", seen)
	}
}
