package conformance

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// Names of the servers in mcpd's config. goLegacyServer is the Go
// everything-server again, with "protocol": "legacy": mcpd speaks the era
// that server's stateful HTTP speaks.
const (
	tsServer       = "ts-fixture"
	goServer       = "go-everything"
	goLegacyServer = "go-everything-legacy"
	// skillsModern and skillsLegacy serve skills (SEP-2640): fakemcp with
	// its skills flag, a modern and a legacy stdio server. They have no
	// HTTP of their own, so their runs are mcpd's only; the aggregate's
	// run (/mcp, every server above as one) is judged against them.
	skillsModern = "skills-modern"
	skillsLegacy = "skills-legacy"
	// tasksServer serves the tasks extension (SEP-2663): fakemcp with its
	// tasksuite flag, a modern stdio server behind mcpd and stateless
	// Streamable HTTP of its own (fakemcp.EnvHTTP) for the baseline.
	tasksServer = "tasks"
	// tasksMode is its fakemcp mode.
	tasksMode = "modern,tasksuite"
	// aggregate names the endpoint /mcp in a suiteRun's server.
	aggregate = ""
)

// skillScenarios are the suite's server scenarios of the skills extension,
// with dns-rebinding-protection, which every run must pass.
var skillScenarios = []string{"sep-2640-skills-enumeration", "sep-2640-skills-directory", "sep-2640-skills-manifest", "dns-rebinding-protection"}

// taskScenarios are the suite's server scenarios of the tasks extension,
// with dns-rebinding-protection, which every run must pass.
var taskScenarios = []string{
	"tasks-lifecycle", "tasks-capability-negotiation", "tasks-wire-fields",
	"tasks-request-state-removal", "tasks-mrtr-input", "tasks-request-headers",
	"tasks-dispatch-and-envelope", "tasks-status-notifications",
	"tasks-required-task-error", "tasks-mrtr-composition",
	"dns-rebinding-protection",
}

// goEverythingPkg is the Go SDK's conformance server: stdio by default,
// Streamable HTTP with -http (stateless unless -stateless=false).
const goEverythingPkg = "github.com/modelcontextprotocol/go-sdk/conformance/everything-server"

// suiteRun is one run of the conformance suite against one server.
type suiteRun struct {
	name   string // names the run in expected-failures.txt
	pkg    string // npm alias of the suite release
	server string // the server in mcpd's config
	// self is the server's own HTTP endpoint in self mode, a key of
	// endpoints; "" when it has none in the run's era (the run is mcpd's only).
	self string
	args []string // extra suite arguments
	// scenarios, when set, are the only scenarios run (one suite run
	// each), instead of the whole suite.
	scenarios []string
	// scenarioArgs are extra suite arguments of one of scenarios.
	scenarioArgs map[string][]string
}

var suiteRuns = []suiteRun{
	{name: "legacy-ts", pkg: "conformance-legacy", server: tsServer, self: "ts"},
	{name: "legacy-go", pkg: "conformance-legacy", server: goServer, self: "go-stateful"},
	{name: "legacy-go-pinned", pkg: "conformance-legacy", server: goLegacyServer, self: "go-stateful"},
	{name: "modern-go", pkg: "conformance", server: goServer, self: "go-stateless",
		args: []string{"--requirements", "2026-07-28"}},
	// mcpd translating between a modern host and a legacy child: the
	// fixture has no modern HTTP of its own.
	{name: "modern-ts", pkg: "conformance", server: tsServer,
		args: []string{"--requirements", "2026-07-28"}},
	// 0.2.0's 2025 session scenario, which 0.1.16 does not have and
	// --requirements 2026-07-28 does not run: a legacy host's session
	// on a legacy child and on a modern one.
	{name: "session-ts", pkg: "conformance", server: tsServer, self: "ts",
		scenarios: []string{"server-session-lifecycle", "dns-rebinding-protection"}},
	{name: "session-go", pkg: "conformance", server: goServer, self: "go-stateful",
		scenarios: []string{"server-session-lifecycle", "dns-rebinding-protection"}},
	// The skills extension on one server (modern and legacy child) and on
	// the aggregate /mcp, where both skills servers and every other are
	// one.
	{name: "skills-modern", pkg: "conformance", server: skillsModern, scenarios: skillScenarios},
	{name: "skills-legacy", pkg: "conformance", server: skillsLegacy, scenarios: skillScenarios},
	{name: "skills-aggregate", pkg: "conformance", server: aggregate, scenarios: skillScenarios},
	// The tasks extension on fakemcp's tasksuite server: its own HTTP and
	// through one server's door. That HTTP is stateless modern only, so
	// dns-rebinding-protection runs at 2026-07-28 (server/discover, not a
	// 2025-11-25 initialize).
	{name: "tasks", pkg: "conformance", server: tasksServer, self: "tasks", scenarios: taskScenarios,
		scenarioArgs: map[string][]string{"dns-rebinding-protection": {"--spec-version", "2026-07-28"}}},
}

// binaries are the programs the test runs.
type binaries struct {
	root         string // the repository
	node         string // Node 22
	fixture      string // fixture/server.mjs
	goEverything string
}

// TestConformance runs the official MCP conformance suite against mcpd's HTTP
// face (or the fixtures' own HTTP servers, see -conformance.target) and fails
// on every failing check not in expected-failures.txt and on every entry
// there that no longer fails.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("conformance suite: skipped under -short")
	}
	targets := map[string][]string{"self": {"self"}, "mcpd": {"mcpd"}, "both": {"self", "mcpd"}}[*targetFlag]
	if targets == nil {
		t.Fatalf("-conformance.target=%q: want mcpd, self or both", *targetFlag)
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
	for _, r := range suiteRuns {
		if suites[r.pkg], err = findSuite(root, r.pkg); err != nil {
			t.Fatal(err)
		}
	}
	bins := binaries{
		root:         root,
		node:         suites["conformance"].node,
		fixture:      filepath.Join(root, "internal", "testing", "conformance", "fixture", "server.mjs"),
		goEverything: goBuild(t, root, t.TempDir(), "everything-server", goEverythingPkg),
	}
	for _, target := range targets {
		t.Run(target, func(t *testing.T) {
			var urls map[string]string // run name -> endpoint
			if target == "self" {
				urls = startSelf(t, bins)
			} else {
				urls = startMcpd(t, bins)
			}
			for _, r := range suiteRuns {
				t.Run(r.name, func(t *testing.T) {
					if urls[r.name] == "" {
						t.Skipf("%s: %s has no %s endpoint of its own in this era", r.name, r.server, target)
					}
					runSuite(t, target, r, suites[r.pkg], urls[r.name], exps)
				})
			}
		})
	}
}

// runSuite runs r against url and judges its results.
func runSuite(t *testing.T, target string, r suiteRun, s suite, url string, exps []expectation) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	results, out, err := r.runOn(ctx, s, url, t.TempDir())
	if err != nil {
		t.Fatalf("%s against %s: %v\noutput:\n%s", r.name, url, err, out)
	}
	if first := judge(target, r.name, results, exps); len(first.unexpected) > 0 {
		// Some scenarios read a response for a fixed 500-1500 ms; under
		// the load of the whole test run a first frame can miss that
		// window. The run is repeated once, and judged on the second.
		t.Logf("%s: unexpected failures in the first run, running it once more: %s", r.name, strings.Join(first.unexpected, "; "))
		if results, out, err = r.runOn(ctx, s, url, t.TempDir()); err != nil {
			t.Fatalf("%s against %s (second run): %v\noutput:\n%s", r.name, url, err, out)
		}
	}
	for scenario := range neverExpected {
		if _, ok := results[scenario]; !ok {
			t.Errorf("scenario %s did not run; it must be part of every run", scenario)
		}
	}
	v := judge(target, r.name, results, exps)
	t.Logf("%s against %s: %d scenarios, %d expected failures", r.name, url, len(results), len(v.expected))
	for _, e := range v.expected {
		t.Logf("  expected: %s", e)
	}
	for _, u := range v.unexpected {
		t.Errorf("unexpected failure (add to expected-failures.txt only with the reason, if the fixture fails it on its own HTTP too): %s", u)
	}
	for _, s := range v.stale {
		t.Errorf("expected failure did not fail: %s %s", r.name, s)
	}
	if t.Failed() {
		t.Logf("suite output:\n%s", out)
	}
}

// runOn runs r's scenarios, or the whole suite, against url.
func (r suiteRun) runOn(ctx context.Context, s suite, url, outDir string) (map[string][]check, string, error) {
	if len(r.scenarios) == 0 {
		return s.run(ctx, url, outDir, r.args...)
	}
	all := map[string][]check{}
	var outs []string
	for i, sc := range r.scenarios {
		dir := filepath.Join(outDir, strconv.Itoa(i))
		if err := os.Mkdir(dir, 0o700); err != nil {
			return nil, "", err
		}
		args := append(append([]string{"--scenario", sc}, r.args...), r.scenarioArgs[sc]...)
		results, out, err := s.run(ctx, url, dir, args...)
		outs = append(outs, out)
		if err != nil {
			return nil, strings.Join(outs, "\n"), err
		}
		for k, v := range results {
			all[k] = append(all[k], v...)
		}
	}
	return all, strings.Join(outs, "\n"), nil
}

// startSelf starts each fixture on its own HTTP server and returns each run's
// endpoint.
func startSelf(t *testing.T, b binaries) map[string]string {
	endpoints := map[string]string{}
	ts := freeAddr(t)
	p := start(t, "ts fixture", b.node, b.fixture, "--http", strings.TrimPrefix(ts, "127.0.0.1:"))
	endpoints["ts"] = "http://" + ts + "/mcp"
	waitHTTP(t, p, endpoints["ts"])
	for key, stateless := range map[string]string{"go-stateful": "false", "go-stateless": "true"} {
		addr := freeAddr(t)
		p := start(t, "go everything-server "+key, b.goEverything, "-http", addr, "-stateless="+stateless)
		endpoints[key] = "http://" + addr + "/mcp"
		waitHTTP(t, p, endpoints[key])
	}
	fake, fakeArgs := fakemcp.Command()
	addr := freeAddr(t)
	p = startEnv(t, "tasks fixture", fakemcp.Env(tasksMode, fakemcp.EnvName+"="+tasksServer, fakemcp.EnvHTTP+"="+addr),
		append([]string{fake}, fakeArgs...)...)
	endpoints["tasks"] = "http://" + addr + "/mcp"
	waitHTTP(t, p, endpoints["tasks"])
	urls := map[string]string{}
	for _, r := range suiteRuns {
		if r.self != "" {
			urls[r.name] = endpoints[r.self]
		}
	}
	return urls
}

// startMcpd starts mcpd with both fixtures as supervised stdio servers and
// its HTTP face on a loopback port, and returns each run's endpoint.
func startMcpd(t *testing.T, b binaries) map[string]string {
	bin := goBuild(t, b.root, t.TempDir(), "mcpd", "./cmd/mcpd", "-race")
	if help, _ := exec.Command(bin, "--help").CombinedOutput(); !strings.Contains(string(help), "http-listen") {
		t.Fatalf("this mcpd has no --http-listen; run the baseline with -conformance.target=self")
	}
	dir, err := os.MkdirTemp("", "mcpd-conformance") // short: the socket path has a length limit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	fake, fakeArgs := fakemcp.Command()
	fakeServer := func(name, mode string) map[string]any {
		return map[string]any{"command": fake, "args": fakeArgs, "autostart": true,
			"env": map[string]string{fakemcp.EnvMode: mode, fakemcp.EnvName: name}}
	}
	config := map[string]any{"mcpServers": map[string]any{
		tsServer:       map[string]any{"command": b.node, "args": []string{b.fixture}, "autostart": true},
		goServer:       map[string]any{"command": b.goEverything, "autostart": true},
		goLegacyServer: map[string]any{"command": b.goEverything, "autostart": true, "protocol": "legacy"},
		skillsModern:   fakeServer(skillsModern, "modern,skills"),
		skillsLegacy:   fakeServer(skillsLegacy, "legacy,skills"),
		tasksServer:    fakeServer(tasksServer, tasksMode),
	}}
	data, err := json.MarshalIndent(config, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	p := start(t, "mcpd", bin, "--socket", filepath.Join(dir, "mcpd.sock"), "--config", cfg,
		"--http-listen", addr, "--state-dir", filepath.Join(dir, "state"), "--log-format", "console")
	urls := map[string]string{}
	for _, r := range suiteRuns {
		urls[r.name] = "http://" + addr + "/servers/" + r.server + "/mcp"
		if r.server == aggregate {
			urls[r.name] = "http://" + addr + "/mcp"
		}
	}
	waitHTTP(t, p, urls[suiteRuns[0].name])
	return urls
}
