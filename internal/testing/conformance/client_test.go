package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// goClientPkg is the Go SDK's conformance client: the baseline (target
// self) of the client scenarios.
const goClientPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-client"

// clientRun is one release of the suite running client scenarios at one
// spec version.
type clientRun struct {
	name      string // names the run in expected-failures.txt
	pkg       string // npm alias of the suite release
	args      []string
	scenarios []string
}

// authCommon are the auth scenarios both releases have.
var authCommon = []string{
	"auth/metadata-default", "auth/metadata-var1", "auth/metadata-var2", "auth/metadata-var3",
	"auth/basic-cimd", "auth/scope-from-www-authenticate", "auth/scope-from-scopes-supported",
	"auth/scope-omitted-when-undefined", "auth/scope-step-up", "auth/scope-retry-limit",
	"auth/token-endpoint-auth-basic", "auth/token-endpoint-auth-post", "auth/token-endpoint-auth-none",
	"auth/pre-registration", "auth/resource-mismatch", "auth/offline-access-scope",
	"auth/offline-access-not-supported",
}

// clientRuns are every client scenario of both releases but the
// extensions (client credentials, DPoP, workload identity, enterprise
// authorization, skills), which no spec revision requires.
var clientRuns = []clientRun{
	{name: "client-legacy", pkg: "conformance-legacy", scenarios: append([]string{
		"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
		"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	}, authCommon...)},
	{name: "client-2025", pkg: "conformance", scenarios: []string{
		"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry",
		"json-schema-2020-12-preservation",
		"auth/2025-03-26-oauth-metadata-backcompat", "auth/2025-03-26-oauth-endpoint-fallback",
	}},
	{name: "client-modern", pkg: "conformance", args: []string{"--spec-version", "2026-07-28"}, scenarios: append([]string{
		"tools_call", "request-metadata", "sep-2322-client-request-state", "http-standard-headers",
		"http-custom-headers", "http-invalid-tool-headers", "json-schema-ref-no-deref",
		"json-schema-2020-12-preservation",
		"auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised",
		"auth/iss-supported-missing", "auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized",
		"auth/metadata-issuer-mismatch",
	}, authCommon...)},
}

// clientParallel bounds the scenarios in flight: each has a Node process,
// mcpd and its bridge or mcpdctl.
const clientParallel = 3

// TestConformanceClient runs the suite's client scenarios with mcpd as the
// client (target mcpd: the driver in driver_test.go) and with the Go SDK's
// conformance client (target self: the baseline), and fails on every
// failing check not in expected-failures.txt and every entry there that no
// longer fails.
func TestConformanceClient(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite: skipped under -short")
	}
	targets := map[string][]string{"self": {"self"}, "mcpd": {"mcpd"}, "both": {"self", "mcpd"}}[*clientTargetFlag]
	if targets == nil {
		t.Fatalf("-conformance.client-target=%q: want mcpd, self or both", *clientTargetFlag)
	}
	exps, err := loadExpectations("expected-failures.txt")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	suites := map[string]suite{}
	for _, r := range clientRuns {
		if suites[r.pkg], err = findSuite(root, r.pkg); err != nil {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	commands := map[string]clientCommand{}
	for _, target := range targets {
		commands[target] = buildClient(t, root, bin, target)
	}
	sem := make(chan struct{}, clientParallel)
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			for _, r := range clientRuns {
				t.Run(r.name, func(t *testing.T) {
					var mu sync.Mutex // guards results and outputs
					results := map[string][]check{}
					outputs := map[string]string{}
					t.Run("scenarios", func(t *testing.T) {
						for _, sc := range r.scenarios {
							t.Run(sc, func(t *testing.T) {
								t.Parallel()
								sem <- struct{}{}
								defer func() { <-sem }()
								checks, out := runClientScenario(t, suites[r.pkg], commands[target], sc, r.args)
								mu.Lock()
								defer mu.Unlock()
								results[sc], outputs[sc] = checks, out
							})
						}
					})
					judgeClient(t, target, r.name, results, outputs, exps)
				})
			}
		})
	}
}

// clientCommand is what the suite runs as the client, with its environment.
type clientCommand struct {
	argv string
	env  []string
}

// buildClient builds what target's scenarios run: mcpd, mcpdctl and this
// test binary as the driver, or the Go SDK's conformance client.
func buildClient(t *testing.T, root, dir, target string) clientCommand {
	if target == "self" {
		return clientCommand{argv: goBuild(t, root, dir, "everything-client", goClientPkg)}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return clientCommand{argv: self, env: []string{
		envDriver + "=1",
		envDriverMcpd + "=" + goBuild(t, root, dir, "mcpd", "./cmd/mcpd", "-race"),
		envDriverCtl + "=" + goBuild(t, root, dir, "mcpdctl", "./cmd/mcpdctl"),
	}}
}

// runClientScenario runs one client scenario and returns its checks and
// the suite's output (with the client's).
func runClientScenario(t *testing.T, s suite, c clientCommand, scenario string, args []string) ([]check, string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := t.TempDir()
	argv := append([]string{s.entry, "client", "--scenario", scenario, "--command", c.argv,
		"--timeout", "90000", "-o", out}, args...)
	cmd := exec.CommandContext(ctx, s.node, argv...)
	cmd.Env = append(append(os.Environ(), "NO_COLOR=1", "FORCE_COLOR=0"), c.env...)
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	runErr := cmd.Run()
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) || ctx.Err() != nil {
		t.Fatalf("run the suite: %v\n%s", errors.Join(runErr, ctx.Err()), buf.String())
	}
	checks, err := readClientChecks(out)
	if err != nil {
		return []check{{ID: scenario, Status: "FAILURE", Description: err.Error()}}, buf.String()
	}
	return checks, buf.String() + clientStderr(out)
}

// readClientChecks reads the one checks.json the suite wrote under dir.
func readClientChecks(dir string) ([]check, error) {
	var found []string
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "checks.json" {
			found = append(found, p)
		}
		return nil
	})
	if len(found) != 1 {
		return nil, fmt.Errorf("want one checks.json under %s, found %d", dir, len(found))
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		return nil, err
	}
	var cs []check
	if err := json.Unmarshal(b, &cs); err != nil {
		return nil, fmt.Errorf("%s: %w", found[0], err)
	}
	return cs, nil
}

// clientStderr is the client's stderr the suite saved, if any.
func clientStderr(dir string) string {
	var s strings.Builder
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "stderr.txt" {
			b, _ := os.ReadFile(p)
			s.WriteString("\n--- client stderr ---\n")
			s.Write(b)
		}
		return nil
	})
	return s.String()
}

// judgeClient reports a run's unexpected failures and stale entries.
func judgeClient(t *testing.T, target, run string, results map[string][]check, outputs map[string]string, exps []expectation) {
	v := judge(target, run, results, exps)
	t.Logf("%s: %d scenarios, %d expected failures", run, len(results), len(v.expected))
	for _, e := range v.expected {
		t.Logf("  expected: %s", e)
	}
	failedScenarios := map[string]bool{}
	for _, u := range v.unexpected {
		t.Errorf("unexpected failure (an entry only if the Go SDK client, target self, fails it too): %s", u)
		sc, _, _ := strings.Cut(u, ":")
		failedScenarios[sc] = true
	}
	for _, s := range v.stale {
		t.Errorf("expected failure did not fail: %s %s", run, s)
	}
	for sc := range failedScenarios {
		t.Logf("output of %s:\n%s", sc, tail(outputs[sc], 6000))
	}
}

// tail is the last n bytes of s, from a line start.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return "…" + s
}
