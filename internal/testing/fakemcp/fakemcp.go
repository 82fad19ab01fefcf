// Package fakemcp is a fake MCP server for tests: a test binary re-executes
// itself with MCPD_FAKE set, and Main turns that process into a scriptable
// stdio MCP server (modern, legacy or dual-era, with misbehaviours on demand).
//
// Use it from any package's TestMain:
//
//	func TestMain(m *testing.M) {
//		fakemcp.Main() // exits the process when MCPD_FAKE is set
//		goleak.VerifyTestMain(m)
//	}
//
// and spawn the fake with
//
//	cmd, args := fakemcp.Command()
//	env := fakemcp.Env("legacy,garbage")
//
// Modes (MCPD_FAKE, comma-separated flags):
//
//	modern       server/discover, every request must carry the modern _meta
//	             envelope (-32602 otherwise), results carry resultType/ttlMs/cacheScope
//	legacy       server/discover → -32601, initialize required first, ping answered
//	dual         both eras on one process (the default when no era flag is given)
//	silentprobe  legacy, never answers any request before initialize
//	exitonprobe  legacy, exits (status 1) on server/discover
//	hanginit     never answers initialize
//	crashonstart writes to stderr and exits 3 at once
//	garbage      a banner, non-JSON, array, scalar, CRLF and one oversize line on
//	             stdout (the oversize line is MCPD_FAKE_OVERSIZE bytes, default
//	             1 MiB + 1), and junk lines around every answer
//	quiet        no "recv <method>" lines on stderr
//	ignorestdin  keep running after stdin EOF (until a signal)
//	ignoreterm   ignore SIGTERM
//	exitonsubscribe  exits (status 4) on every resources/subscribe
//	(tool stallstdin makes any mode stop reading its stdin, staying alive)
//	templates    lists the resource template GreetingTemplate (its resources
//	             are readable), declares completions and answers
//	             completion/complete for its "name" argument and the prompt
//	             greet's (templates.go)
//	toolsonly    declares the tools capability only (and still answers the
//	             other lists, as a careless server might)
//	readall      lists no resources and answers a read of any URI with the
//	             text "read anything: URI", as a careless server might
//	skills       serves skills (SEP-2640) named after EnvName (skills.go)
//	tasks        declares tasks in both eras; tool start_task answers with
//	             a task, tool task_status changes one and announces it
//	             a task (tasks.go)
//	tasksuite    the tasks extension (SEP-2663) as the conformance suite's
//	             tasks-* scenarios want it: tools greet, slow_compute,
//	             failing_job, protocol_error_job, confirm_delete, multi_input,
//	             test_tool_with_task (tasksuite.go)
//	rootsatinit  legacy: on initialize, first sends roots/list to the client
//	             (a request tied to no call) and answers initialize once
//	             that is answered (tool initroots returns the answer)
//
// Every message received is counted (tool "stats") and, unless quiet, logged
// to stderr as "recv <method> <id>" for a request, "recv <method>" for a
// notification, "recv response <id>" for an answer to the fake's own request. Every
// notifications/cancelled is logged as "cancelled <requestId>" and the
// cancelled request is not answered (a subscriptions/listen still gets its
// closing result, as the Go SDK does).
//
// Tools are listed in the tools table in tools.go. There is also a resource
// fake://hello and a prompt greet.
package fakemcp

import (
	"os"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/pollio"
)

// Environment variables read by the fake.
const (
	// EnvMode selects the fake and its flags, e.g. "legacy,garbage".
	EnvMode = "MCPD_FAKE"
	// EnvVersions is a comma-separated list of the modern server's
	// supportedVersions. Default "2026-07-28,2025-11-25".
	EnvVersions = "MCPD_FAKE_VERSIONS"
	// EnvTTL is the ttlMs of cacheable modern results. Default 60000.
	EnvTTL = "MCPD_FAKE_TTL_MS"
	// EnvOversize is the size of the garbage mode's oversize line in bytes.
	EnvOversize = "MCPD_FAKE_OVERSIZE"
	// EnvCrashWhile names a file: while it exists the fake crashes on
	// start as with the crashonstart flag.
	EnvCrashWhile = "MCPD_FAKE_CRASH_WHILE"
	// EnvListDelay delays every tools/list answer by this many
	// milliseconds (a cancellation still ends it at once). Default 0.
	EnvListDelay = "MCPD_FAKE_LIST_DELAY_MS"
	// EnvListDelayWhile names a file: with it set, EnvListDelay applies
	// only while that file exists.
	EnvListDelayWhile = "MCPD_FAKE_LIST_DELAY_WHILE"
	// EnvStartDelay makes the fake wait this many milliseconds before it
	// reads its first message, as a server slow to start does. Default 0.
	EnvStartDelay = "MCPD_FAKE_START_DELAY_MS"
	// EnvName is the serverInfo name the fake reports. Default "fakemcp".
	EnvName = "MCPD_FAKE_NAME"
	// EnvStderr is a line the fake writes to stderr as it starts, after
	// its "started" line. Default none.
	EnvStderr = "MCPD_FAKE_STDERR"
	// EnvHTTP, when set, makes the fake serve stateless Streamable HTTP
	// on this address (POST /mcp, modern requests only) instead of stdio
	// (http.go).
	EnvHTTP = "MCPD_FAKE_HTTP"
)

// Default values of the knobs above.
const (
	DefaultVersions = jsonrpc.ModernVersion + "," + jsonrpc.LegacyVersion
	DefaultTTL      = 60000
	DefaultOversize = 1<<20 + 1
)

// Main runs the fake server described by $MCPD_FAKE on os.Stdin/os.Stdout
// and exits the process; it never returns in that case. When MCPD_FAKE is
// unset it returns false at once. (The bool result lets a caller write
// `if fakemcp.Main() { return }`, which is never taken.)
func Main() bool {
	mode, ok := os.LookupEnv(EnvMode)
	if !ok || mode == "" {
		return false
	}
	if addr := os.Getenv(EnvHTTP); addr != "" {
		os.Exit(serveHTTP(mode, addr, os.Stderr))
	}
	os.Exit(run(mode, pollio.Stdin(), os.Stdout, os.Stderr)) // pollio: no 60 s stall at a GC
	return true
}

// Command returns the path of the running (test) binary and the arguments
// with which it runs no tests, so a test can spawn itself as a fake server
// (with Env).
func Command() (string, []string) {
	path, err := os.Executable()
	if err != nil {
		path = os.Args[0]
	}
	return path, []string{"-test.run=^$"}
}

// Env returns the current environment without any MCPD_FAKE* variables, plus
// MCPD_FAKE=mode and the extra "KEY=VALUE" entries.
func Env(mode string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCPD_FAKE") {
			env = append(env, kv)
		}
	}
	env = append(env, EnvMode+"="+mode)
	return append(env, extra...)
}

// Exit statuses of the fake.
const (
	exitCrashOnStart = 3
	exitProbe        = 1
	exitCrashTool    = 2
	exitSubscribe    = 4
)

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
