// Package typescript runs the TypeScript client's tests (node's test
// runner) against a real mcpd built from this module; the package holds
// that test only.
package typescript

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/clienttest"
)

func TestTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: starts mcpd and its children")
	}
	node := clienttest.Require(t, "node")
	if _, err := os.Stat("node_modules/@grpc/grpc-js"); err != nil {
		clienttest.Missing(t, "the client's npm packages (run npm ci in clients/typescript)")
	}
	env := clienttest.Build(t)
	if _, err := os.Stat(env.EverythingJS); err != nil {
		clienttest.Missing(t, "server-everything (run npm ci in the repository root)")
	}
	files, err := filepath.Glob("test/*.test.js")
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files: %v", err)
	}
	typecheck(t, node)
	cmd := exec.Command(node, append([]string{"--test", "--test-reporter=spec"}, files...)...)
	cmd.Env = append(os.Environ(), env.Vars()...)
	out, err := cmd.CombinedOutput()
	t.Logf("node --test %s:\n%s", strings.Join(files, " "), out)
	if err != nil {
		t.Fatalf("node --test: %v", err)
	}
}

// typecheck compiles test/types.ts against the package's hand-written
// typings with the TypeScript compiler (a devDependency).
func typecheck(t *testing.T, node string) {
	t.Helper()
	tsc := filepath.Join("node_modules", "typescript", "bin", "tsc")
	if _, err := os.Stat(tsc); err != nil {
		clienttest.Missing(t, "typescript (run npm ci in clients/typescript)")
	}
	out, err := exec.Command(node, tsc, "-p", filepath.Join("test", "tsconfig.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("tsc: the typings of lib/index.d.ts do not fit test/types.ts: %v\n%s", err, out)
	}
}
