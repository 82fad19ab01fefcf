package service

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/mcpd-dev/mcpd/"

// grpcImporters are the packages that may import gRPC or mcpd's own
// protocol buffers (proto/mcpd/v1), and why: the adapter and the clients
// of the socket. No other package of the module imports either.
var grpcImporters = map[string]string{
	"cmd/mcpd":            "serves the gRPC socket",
	"cmd/mcpdctl":         "a gRPC client of mcpd",
	"bench":               "measures the gRPC door",
	"proto/mcpd/v1":       "the generated contract",
	"internal/api":        "the adapter: the gRPC service on the in-process one",
	"internal/apiconv":    "the conversions between mcpd.v1 and the service's plain values, for both sides of the socket",
	"internal/apiclient":  "the client side of the gRPC socket: dial options, request metadata and a failed call read back as the service's error",
	"internal/bridgegrpc": "the bridge's Backend over mcpd's gRPC socket",
	"internal/tracing":    "the OTLP exporter speaks gRPC; carries trace context in gRPC metadata",

	// Test support.
	"internal/testing/mcpdtest": "serves mcpd's gRPC API, a real mcpd's or a test's own, on a Unix socket",
}

// TestImportRules enforces the import rules on the real build graph: only
// grpcImporters import gRPC or mcpd.v1, and no other package depends on
// them (the in-process service, internal/core, and the faces that call it
// link neither); and the service's vocabulary depends on nothing of the
// module but jsonrpc.
func TestImportRules(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(goBin, "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", module+"...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			t.Fatalf("go list line %q", line)
		}
		name := strings.TrimPrefix(parts[0], module)
		imports, deps := strings.Fields(parts[1]), strings.Fields(parts[2])
		seen++
		if grpcImporters[name] != "" {
			continue
		}
		if d, ok := firstRPC(imports); ok {
			t.Errorf("%s imports %s: only the adapter and the socket's clients may", name, d)
		}
		if d, ok := firstRPC(deps); ok {
			t.Errorf("%s depends on %s: only the adapter and the socket's clients may", name, d)
		}
		if name == "internal/service" {
			for _, d := range deps {
				if strings.HasPrefix(d, module) && d != module+"internal/jsonrpc" {
					t.Errorf("internal/service depends on %s: it is standard library and jsonrpc only", d)
				}
			}
		}
	}
	if seen < 20 {
		t.Fatalf("go list named %d packages: implausible", seen)
	}
}

// firstRPC is the first of pkgs that is gRPC or mcpd.v1.
func firstRPC(pkgs []string) (string, bool) {
	for _, d := range pkgs {
		if strings.HasPrefix(d, "google.golang.org/grpc") || d == module+"proto/mcpd/v1" {
			return d, true
		}
	}
	return "", false
}
