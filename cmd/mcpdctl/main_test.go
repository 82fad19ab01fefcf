package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fakeNow is the clock the tests give mcpdctl.
var fakeNow = time.UnixMilli(1_700_000_500_000)

func TestMain(m *testing.M) {
	if code, ok := runAsHelper(); ok { // uid_test.go
		os.Exit(code)
	}
	timeNow = func() time.Time { return fakeNow }
	goleak.VerifyTestMain(m)
}

// result is what one mcpdctl invocation did.
type result struct {
	stdout, stderr string
	code           int
}

// mcpdctl runs the CLI in-process as main does and returns its output and
// exit code.
func mcpdctl(t *testing.T, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	code := report(err, &stderr)
	return result{stdout.String(), stderr.String(), code}
}

// transcript is the golden form of a result; the socket path, which changes
// with every run, is replaced by SOCKET.
func (r result) transcript(args []string, sock string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "$ mcpdctl %s\nexit %d\n--- stdout\n%s--- stderr\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
	s := b.String()
	if sock != "" {
		s = strings.ReplaceAll(s, sock, "SOCKET")
	}
	return s
}

// checkGolden compares got with testdata/name.golden, or rewrites the file
// under -update.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// TestGolden runs every verb against the canned daemon and compares stdout,
// stderr and the exit code with testdata/<name>.golden.
func TestGolden(t *testing.T) {
	tests := []goldenCase{
		{"status", []string{"status"}},
		{"status_json", []string{"status", "--json"}},
		{"status_quiet", []string{"status", "-q"}},
		{"servers", []string{"servers"}},
		{"servers_json", []string{"servers", "--json"}},
		{"start", []string{"start", "idle"}},
		{"stop", []string{"stop", "weather"}},
		{"restart_json", []string{"restart", "notes", "--json"}},
		{"restart_crashloop", []string{"restart", "looping"}},
		{"start_unknown", []string{"start", "nope"}},
		{"logs", []string{"logs", "weather"}},
		{"logs_n", []string{"logs", "weather", "-n", "1"}},
		{"logs_json", []string{"logs", "--json", "weather"}},
		{"logs_unknown", []string{"logs", "nope"}},
		{"tools", []string{"tools"}},
		{"tools_json", []string{"tools", "--json"}},
		{"tools_one", []string{"tools", "weather"}},
		{"tools_unavailable", []string{"tools", "looping"}},
		{"tools_unsupported", []string{"tools", "idle"}},
		{"tools_unknown", []string{"tools", "nope"}},
		{"call", []string{"call", "weather", "forecast", "city=Paris"}},
		{"call_json", []string{"call", "weather", "forecast", "--json"}},
		{"call_structured", []string{"call", "weather", "structured"}},
		{"call_is_error", []string{"call", "weather", "forecast", "city=Atlantis"}},
		{"call_result_not_object", []string{"call", "weather", "array"}},
		{"call_bad_content", []string{"call", "weather", "badcontent"}},
		{"call_mcp_error", []string{"call", "weather", "alerts"}},
		{"call_unknown_tool", []string{"call", "weather", "nope"}},
		{"call_unknown_tool_near", []string{"call", "weather", "forcast"}},
		{"call_unknown_tool_is_error", []string{"call", "notes", "add_notes"}},
		{"call_input_required", []string{"call", "weather", "asks"}},
		{"call_unknown_server", []string{"call", "nope", "forecast"}},
		{"call_key_values", []string{"call", "notes", "echo", "n=5", "on=true", "opts={\"a\": [1, 2]}", "city=Paris", "zip=01234", "empty=", "quoted=\"5\"", "html=<a&b>"}},
		{"call_json_arg", []string{"call", "notes", "echo", `{"n": 5, "s": "x"}`}},
		{"call_bad_key_value", []string{"call", "notes", "echo", "novalue"}},
		{"call_bad_json_arg", []string{"call", "notes", "echo", "{not json"}},
		{"call_missing_tool", []string{"call", "notes"}},
		{"read", []string{"read", "notes", "file:///notes/todo.md"}},
		{"read_json", []string{"read", "notes", "file:///notes/todo.md", "--json"}},
		{"read_missing", []string{"read", "notes", "file:///nope"}},
		{"prompts", []string{"prompts"}},
		{"prompts_json", []string{"prompts", "--json"}},
		{"prompt", []string{"prompt", "weather", "plan_trip", "city=Paris", "days=3"}},
		{"prompt_unknown", []string{"prompt", "weather", "nope"}},
		{"resources", []string{"resources"}},
		{"resources_json", []string{"resources", "--json"}},
		{"resources_one", []string{"resources", "notes"}},
	}
	runGoldens(t, tests)
}

// goldenCase is one mcpdctl command line and the golden file of its
// transcript (testdata/NAME.golden).
type goldenCase struct {
	name string
	args []string
}

// runGoldens runs each case against a fake mcpd and checks its transcript.
func runGoldens(t *testing.T, tests []goldenCase) {
	t.Helper()
	_, sock := startFake(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--socket", sock}, tt.args...)
			r := mcpdctl(t, args...)
			checkGolden(t, tt.name, r.transcript(tt.args, sock))
		})
	}
}

// TestUsageErrors checks that a wrong command line exits 2 and says why.
func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // first line of stderr
	}{
		{"no verb", nil, "mcpdctl controls mcpd, the daemon that supervises local MCP servers."},
		{"unknown verb", []string{"frobnicate"}, `mcpdctl: unknown verb "frobnicate"`},
		{"unknown global flag", []string{"--frob", "status"}, "mcpdctl: flag provided but not defined: -frob"},
		{"unknown verb flag", []string{"status", "--frob"}, "mcpdctl status: flag provided but not defined: -frob"},
		{"extra argument", []string{"status", "x"}, `mcpdctl status: unexpected argument "x"`},
		{"missing name", []string{"start"}, "mcpdctl start: missing arguments"},
		{"two names", []string{"stop", "a", "b"}, `mcpdctl stop: unexpected argument "b"`},
		{"bad -n", []string{"logs", "x", "-n", "0"}, "mcpdctl logs: -n must be positive, not 0"},
		{"bad duration", []string{"tools", "--timeout", "soon"}, `mcpdctl tools: invalid value "soon" for flag -timeout: parse error (want a duration such as 30s, 5m or 1h30m)`},
		{"key without value", []string{"call", "s", "t", "a=1", "b"}, `mcpdctl call: argument "b" is not key=value`},
		{"duplicate key", []string{"call", "s", "t", "a=1", "a=2"}, `mcpdctl call: argument "a" given twice`},
		{"json and key=value", []string{"call", "s", "t", "{}", "a=1"}, "mcpdctl call: give the arguments either as one JSON object or as key=value pairs"},
		{"json array", []string{"call", "s", "t", "{]"}, "mcpdctl call: arguments are not a JSON object: invalid character ']' looking for beginning of object key string"},
		{"prompt key", []string{"prompt", "s", "p", "=x"}, `mcpdctl prompt: argument "=x" is not key=value`},
		{"help two verbs", []string{"help", "a", "b"}, "mcpdctl: help takes at most one verb"},
		{"audit since not a duration", []string{"audit", "--since", "soon"}, `mcpdctl audit: invalid value "soon" for flag -since: parse error (want a duration such as 30s, 5m or 1h30m)`},
		{"audit since negative", []string{"audit", "--since", "-5m"}, "mcpdctl audit: --since -5m0s: want a positive duration, how far back to print (1h, 30m)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// No daemon: a usage error must be found before dialing.
			r := mcpdctl(t, append([]string{"--socket", "/nonexistent/mcpd.sock"}, tt.args...)...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", r.code, exitUsage, r.stderr)
			}
			if first, _, _ := strings.Cut(r.stderr, "\n"); first != tt.want {
				t.Errorf("stderr first line:\n got %q\nwant %q", first, tt.want)
			}
			if r.stdout != "" {
				t.Errorf("stdout = %q, want nothing", r.stdout)
			}
		})
	}
}

// TestHelp checks --help, -h and "help VERB" for every verb, and the
// top-level help, against goldens.
func TestHelp(t *testing.T) {
	top := mcpdctl(t, "--help")
	if top.code != exitOK || top.stderr != "" {
		t.Fatalf("--help: exit %d, stderr %q", top.code, top.stderr)
	}
	checkGolden(t, "help", top.transcript([]string{"--help"}, ""))
	if r := mcpdctl(t, "help"); r != top {
		t.Errorf("help differs from --help:\n%s", cmp.Diff(top, r, cmp.AllowUnexported(result{})))
	}
	for _, cmd := range commands {
		if !strings.Contains(top.stdout, "\n  "+cmd.name+" ") {
			t.Errorf("top-level help does not list %s", cmd.name)
		}
		t.Run(cmd.name, func(t *testing.T) {
			r := mcpdctl(t, "--socket", "/nonexistent/mcpd.sock", cmd.name, "--help")
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			if want := "usage: " + usageLine(cmd) + "\n"; !strings.HasPrefix(r.stdout, want) {
				t.Errorf("help starts %q, want %q", r.stdout, want)
			}
			if cmd.name != "version" && !strings.Contains(r.stdout, "--timeout duration") {
				t.Errorf("help does not mention --timeout:\n%s", r.stdout)
			}
			for _, alt := range [][]string{{cmd.name, "-h"}, {"help", cmd.name}} {
				if got := mcpdctl(t, alt...); got != r {
					t.Errorf("%v differs from --help:\n%s", alt, cmp.Diff(r, got, cmp.AllowUnexported(result{})))
				}
			}
			checkGolden(t, "help_"+cmd.name, r.transcript([]string{cmd.name, "--help"}, ""))
		})
	}
	if r := mcpdctl(t, "help", "frob"); r.code != exitUsage {
		t.Errorf("help frob: exit %d, want %d", r.code, exitUsage)
	}
}

// TestNotRunning checks the one-line message when there is no daemon, for
// every verb that talks to it.
func TestNotRunning(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mcpd.sock")
	want := "mcpdctl: mcpd is not running (no socket at " + sock + "); start it with: mcpd --socket " + sock + "\n"
	verbs := [][]string{
		{"status"}, {"servers"}, {"start", "x"}, {"stop", "x"}, {"restart", "x"}, {"logs", "x"},
		{"tools"}, {"call", "x", "t"}, {"prompts"}, {"prompt", "x", "p"}, {"resources"}, {"read", "x", "u"},
	}
	for _, args := range verbs {
		r := mcpdctl(t, append([]string{"--socket", sock}, args...)...)
		if r.code != exitFailure || r.stderr != want || r.stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and stderr %q", args, r.code, r.stdout, r.stderr, want)
		}
	}
}

// TestNotRunningFromEnv resolves the socket from $MCPD_SOCKET.
func TestNotRunningFromEnv(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "env.sock")
	t.Setenv("MCPD_SOCKET", sock)
	r := mcpdctl(t, "status")
	want := "mcpdctl: mcpd is not running (no socket at " + sock + "); start it with: mcpd (or: systemctl --user start mcpd)\n"
	if r.code != exitFailure || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
}

// TestStaleSocket: a socket file nobody listens on is a daemon that is not
// running (codes.Unavailable on the first RPC).
func TestStaleSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "mcpd.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	r := mcpdctl(t, "--socket", sock, "status")
	want := "mcpdctl: nothing answers at " + sock + ": if it is an ssh forward, is the ssh session still up? If not, mcpd is not running; start it with: mcpd --socket " + sock + "\n"
	if r.code != exitFailure || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
}

// TestClientIdentity checks the identity metadata and call options mcpdctl
// sends.
func TestClientIdentity(t *testing.T) {
	f, sock := startFake(t)
	for _, args := range [][]string{{"status"}, {"call", "notes", "echo"}} {
		if r := mcpdctl(t, append([]string{"--socket", sock}, args...)...); r.code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, r.code, r.stderr)
		}
		md := f.lastMetadata()
		if got := md.Get(mcpdv1.MetadataClientName); len(got) != 1 || got[0] != "mcpdctl" {
			t.Errorf("%v: %s = %q, want [mcpdctl]", args, mcpdv1.MetadataClientName, got)
		}
		if got := md.Get(mcpdv1.MetadataClientVersion); len(got) != 1 || got[0] != version.Version {
			t.Errorf("%v: %s = %q, want [%s]", args, mcpdv1.MetadataClientVersion, got, version.Version)
		}
	}
	f.mu.Lock()
	call := f.calls[len(f.calls)-1]
	f.mu.Unlock()
	if got := call.GetOptions().GetClient().GetName(); got != "mcpdctl" {
		t.Errorf("call options client name = %q, want mcpdctl", got)
	}
	if got := call.GetMetaJson(); got != `{"progressToken":"mcpdctl"}` {
		t.Errorf("meta_json = %q, want a progress token", got)
	}
}

// TestPromptArguments: prompt arguments are all strings.
func TestPromptArguments(t *testing.T) {
	f, sock := startFake(t)
	r := mcpdctl(t, "--socket", sock, "prompt", "weather", "plan_trip", "days=3", "city=Paris")
	if r.code != exitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	f.mu.Lock()
	got := f.prompts[len(f.prompts)-1].GetArgumentsJson()
	f.mu.Unlock()
	if want := `{"days":"3","city":"Paris"}`; got != want {
		t.Errorf("arguments_json = %s, want %s", got, want)
	}
}

// TestTimeout: --timeout bounds a call that never answers.
func TestTimeout(t *testing.T) {
	f, sock := startFake(t)
	r := mcpdctl(t, "--socket", sock, "call", "weather", "slow", "--timeout", "100ms")
	if want := "mcpdctl: timed out after 100ms (see --timeout)\n"; r.code != exitFailure || r.stderr != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", r.code, r.stderr, want)
	}
	f.mu.Lock()
	got := f.calls[len(f.calls)-1].GetOptions().GetTimeoutMs()
	f.mu.Unlock()
	if got != 100 {
		t.Errorf("options.timeout_ms = %d, want 100", got)
	}
}

// TestRequestTimeout: without --timeout, mcpdctl leaves each server's
// requestTimeout in force; with it, one server gets all of it and each server
// of an aggregate list a little less, so that mcpd can still report a server
// too slow to list and list the others.
func TestRequestTimeout(t *testing.T) {
	f, sock := startFake(t)
	tests := []struct {
		args     []string
		min, max int64 // options.timeout_ms
	}{
		{[]string{"tools"}, 0, 0},
		{[]string{"tools", "weather"}, 0, 0},
		{[]string{"prompts", "--json"}, 0, 0},
		{[]string{"read", "notes", "file:///notes/todo.md"}, 0, 0},
		{[]string{"prompt", "weather", "plan_trip", "city=Paris"}, 0, 0},
		{[]string{"tools", "weather", "--timeout", "5s"}, 5000, 5000},
		{[]string{"read", "notes", "file:///notes/todo.md", "--timeout", "5s"}, 5000, 5000},
		{[]string{"tools", "--timeout", "5s"}, 4000, 4500},
		{[]string{"resources", "--timeout", "30s"}, 27000, 29000},
	}
	for _, tt := range tests {
		if r := mcpdctl(t, append([]string{"--socket", sock}, tt.args...)...); r.code != exitOK {
			t.Fatalf("%v: exit %d: %s", tt.args, r.code, r.stderr)
		}
		if got := f.lastOptions().GetTimeoutMs(); got < tt.min || got > tt.max {
			t.Errorf("%v: options.timeout_ms = %d, want %d..%d", tt.args, got, tt.min, tt.max)
		}
	}
}

func TestParseKeyValues(t *testing.T) {
	tests := []struct {
		args       []string
		jsonValues bool
		want       string
		wantErr    bool
	}{
		{args: nil, jsonValues: true, want: `{}`},
		{args: []string{"n=5", "f=1.5", "b=true", "z=null"}, jsonValues: true, want: `{"n":5,"f":1.5,"b":true,"z":null}`},
		{args: []string{`o={"a": [1, 2]}`, `l=[1, "x"]`}, jsonValues: true, want: `{"o":{"a":[1,2]},"l":[1,"x"]}`},
		{args: []string{"s=Paris", "zip=01234", "e=", `q="5"`, "sp=two words"}, jsonValues: true, want: `{"s":"Paris","zip":"01234","e":"","q":"5","sp":"two words"}`},
		{args: []string{"eq=a=b", "h=<a&b>", `u=é"\`}, jsonValues: true, want: `{"eq":"a=b","h":"<a&b>","u":"é\"\\"}`},
		{args: []string{"n=5", "b=true"}, jsonValues: false, want: `{"n":"5","b":"true"}`},
		{args: []string{"novalue"}, jsonValues: true, wantErr: true},
		{args: []string{"=x"}, jsonValues: true, wantErr: true},
		{args: []string{"a=1", "a=2"}, jsonValues: false, wantErr: true},
	}
	for _, tt := range tests {
		got, err := parseKeyValues(tt.args, tt.jsonValues)
		if (err != nil) != tt.wantErr {
			t.Errorf("parseKeyValues(%q, %v) error = %v, want error %v", tt.args, tt.jsonValues, err, tt.wantErr)
			continue
		}
		if got != tt.want && !tt.wantErr {
			t.Errorf("parseKeyValues(%q, %v) = %s, want %s", tt.args, tt.jsonValues, got, tt.want)
		}
	}
}

func TestWithServer(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{in: `{}`, want: `{"server":"s"}`},
		{in: ` { "name" : "t", "x": {"y": [1]} } `, want: `{"server":"s","name" : "t", "x": {"y": [1]}}`},
		{in: `{"server":"theirs","name":"t"}`, want: `{"name":"t","server":"s"}`},
		{in: `[1]`, wantErr: true},
		{in: `null`, wantErr: true},
	}
	for _, tt := range tests {
		got, err := withServer([]byte(tt.in), "s")
		if (err != nil) != tt.wantErr {
			t.Errorf("withServer(%s) error = %v, want error %v", tt.in, err, tt.wantErr)
			continue
		}
		if !tt.wantErr && string(got) != tt.want {
			t.Errorf("withServer(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	tests := []struct {
		ms   int64
		want string
	}{
		{-1, "-"}, {0, "0s"}, {59_999, "59s"}, {60_000, "1m0s"}, {3_723_000, "1h2m"}, {90_061_000, "1d1h"},
	}
	for _, tt := range tests {
		if got := formatDuration(tt.ms); got != tt.want {
			t.Errorf("formatDuration(%d) = %q, want %q", tt.ms, got, tt.want)
		}
	}
}

// blockingMcpd answers CallTool by waiting until the call ends.
type blockingMcpd struct {
	mcpdv1.UnimplementedMcpdServer
	started chan struct{}
}

func (b *blockingMcpd) CallTool(_ *mcpdv1.CallToolRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	close(b.started)
	<-stream.Context().Done()
	return stream.Context().Err()
}

// A call cut because mcpd went away says so, not that mcpd is not running.
// mcpd passes a child's result on whole, up to maxLineSize (32 MiB by
// default): mcpdctl takes results over gRPC's default 4 MiB limit.
func TestCallPrintsResultOverFourMiB(t *testing.T) {
	_, sock := startFake(t)
	r := mcpdctl(t, "--socket", sock, "call", "weather", "big")
	if r.code != exitOK || strings.Count(r.stdout, "x") < bigResultSize {
		t.Fatalf("call big: exit %d, %d bytes of stdout, stderr %q", r.code, len(r.stdout), r.stderr)
	}
}

func TestCallCutByMcpdGoingAway(t *testing.T) {
	b := &blockingMcpd{started: make(chan struct{})}
	sock, stop := mcpdtest.ServeStoppable(t, b)
	got := make(chan result, 1)
	go func() { got <- mcpdctl(t, "--socket", sock, "call", "s", "slow") }()
	<-b.started
	stop() // also removes the socket file, as mcpd's shutdown does
	r := <-got
	if r.code == exitOK || !strings.Contains(r.stderr, "lost the connection to mcpd during the call") {
		t.Fatalf("call cut by mcpd going away: %+v", r)
	}
}
