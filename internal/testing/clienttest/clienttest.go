// Package clienttest prepares what the client packages' test suites (the
// TypeScript and Python clients under clients/) need to run against a real
// mcpd: the mcpd and demo-server binaries built from this module, and the
// paths of the npm reference servers. It is used by tests only.
package clienttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Env is what a client test suite is given, as MCPD_BIN and MCPD_TEST_*
// variables. (Run on their own, the suites find or build the same
// themselves: see clients/typescript/test/harness.js and
// clients/python/tests/harness.py.)
type Env struct {
	Mcpd         string   // the mcpd binary
	DemoServer   string   // the demo-server binary
	EverythingJS string   // server-everything's entry point
	McpdArgs     []string // extra mcpd flags (--http-listen off when mcpd has it)
}

// Vars returns e as environment variables.
func (e Env) Vars() []string {
	return []string{
		"MCPD_BIN=" + e.Mcpd,
		"MCPD_TEST_DEMO_SERVER=" + e.DemoServer,
		"MCPD_TEST_EVERYTHING_JS=" + e.EverythingJS,
		"MCPD_TEST_MCPD_ARGS=" + strings.Join(e.McpdArgs, " "),
	}
}

// Missing skips the test because something it needs is absent, except in
// CI (CI=true), where it fails instead.
func Missing(t *testing.T, what string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing, and CI must run this test", what)
	}
	t.Skipf("%s is missing; skipping (CI=true makes this a failure)", what)
}

// Require returns the path of the program name, or skips (fails in CI).
func Require(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, name)
	}
	return p
}

// RepoRoot is the module's root directory.
func RepoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// Build builds mcpd and the demo server into a temporary directory removed
// after the test.
func Build(t *testing.T) Env {
	t.Helper()
	root := RepoRoot(t)
	dir := t.TempDir()
	env := Env{
		Mcpd:         filepath.Join(dir, "mcpd"),
		DemoServer:   filepath.Join(dir, "demo-server"),
		EverythingJS: filepath.Join(root, "node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([][]byte, 2)
	for i, b := range [][2]string{{env.Mcpd, "./cmd/mcpd"}, {env.DemoServer, "./examples/demo-server"}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", "build", "-o", b[0], b[1])
			cmd.Dir = root
			outs[i], errs[i] = cmd.CombinedOutput()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("go build: %v\n%s", err, outs[i])
		}
	}
	help, _ := exec.Command(env.Mcpd, "--help").CombinedOutput()
	if strings.Contains(string(help), "-http-listen") {
		env.McpdArgs = []string{"--http-listen", "off"}
	}
	return env
}
