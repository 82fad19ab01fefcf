package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// tsHTTPResult is what testdata/tshttp.mjs prints.
type tsHTTPResult struct {
	Server         struct{ Name string }
	Protocol       string
	SessionID      string
	Tools          []string
	Prompts        []string
	Resources      []string
	Echo           string
	ProgressResult string
	Progress       []struct {
		Token    string
		Progress float64
	}
	Read    string
	Prompt  string
	Sample  string
	Sampled int
	Updated string
	Cancel  string
}

// runTSHTTP runs the TypeScript SDK host of testdata/tshttp.mjs on url with
// plan. With a "sleep" in the plan, sleeping is called once the call is
// sent and returns when the child runs it; the host then aborts it.
func runTSHTTP(t *testing.T, url string, plan map[string]any, sleeping func()) tsHTTPResult {
	t.Helper()
	node := requireNode(t)
	planJSON, err := json.Marshal(plan)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, filepath.Join("testdata", "tshttp.mjs"), url, string(planJSON))
	cmd.Env = daemonEnv()
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill() // no-op once it exited
		cmd.Wait()
	})
	dec := json.NewDecoder(stdout)
	if plan["sleep"] != nil {
		var phase struct{ Phase string }
		if err := dec.Decode(&phase); err != nil || phase.Phase != "sleeping" {
			t.Fatalf("ts client: %+v, %v", phase, err)
		}
		sleeping()
		stdin.Write([]byte("cancel\n"))
	}
	var out tsHTTPResult
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("ts client result: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("ts client: %v", err)
	}
	return out
}

func call(name string, args map[string]any) map[string]any {
	return map[string]any{"name": name, "arguments": args}
}

// has reports whether list holds every one of want.
func has(list []string, want ...string) bool {
	for _, w := range want {
		found := false
		for _, l := range list {
			found = found || l == w
		}
		if !found {
			return false
		}
	}
	return true
}

// checkTSProgress checks the host got n progress notifications with its
// own token, in order.
func checkTSProgress(t *testing.T, out tsHTTPResult, n int) {
	t.Helper()
	if len(out.Progress) != n {
		t.Errorf("progress = %+v, want %d notifications", out.Progress, n)
		return
	}
	for i, p := range out.Progress {
		if p.Token != "ts-token" || p.Progress != float64(i+1) {
			t.Errorf("progress %d = %+v, want the host's token and %d", i, p, i+1)
		}
	}
}

// The TypeScript SDK host on server-everything's own endpoint: a legacy
// child behind a legacy (2025-11-25) HTTP session, with sampling answered
// by the host and resource updates on the session's GET stream.
func TestHTTPTypeScriptLegacyChild(t *testing.T) {
	_, base := startHTTPDaemon(t, map[string]map[string]any{"everything": everythingServer(t)})
	const uri = "demo://resource/dynamic/text/1"
	out := runTSHTTP(t, base+"/servers/everything/mcp", map[string]any{
		"echo":      call("echo", map[string]any{"message": "hi ts"}),
		"progress":  call("trigger-long-running-operation", map[string]any{"duration": 0.1, "steps": 2}),
		"read":      uri,
		"prompt":    map[string]any{"name": "simple-prompt"},
		"sample":    call("trigger-sampling-request", map[string]any{"prompt": "hello", "maxTokens": 10}),
		"subscribe": map[string]any{"uri": uri, "trigger": map[string]any{"name": "toggle-subscriber-updates", "arguments": map[string]any{}, "once": true}},
	}, nil)
	if out.Protocol != "2025-11-25" || out.SessionID == "" {
		t.Errorf("protocol %q session %q, want a 2025-11-25 session", out.Protocol, out.SessionID)
	}
	if !has(out.Tools, "echo", "trigger-long-running-operation", "trigger-sampling-request") || !has(out.Prompts, "simple-prompt") {
		t.Errorf("tools %v prompts %v: want server-everything's", out.Tools, out.Prompts)
	}
	if out.Echo != "Echo: hi ts" {
		t.Errorf("echo = %q", out.Echo)
	}
	checkTSProgress(t, out, 2)
	if !strings.HasPrefix(out.Read, "Resource 1:") || out.Prompt != "This is a simple prompt without arguments." {
		t.Errorf("read %q prompt %q", out.Read, out.Prompt)
	}
	if !strings.Contains(out.Sample, "sampled by ts") || !strings.Contains(out.Sample, "ts-model") || out.Sampled != 1 {
		t.Errorf("sample = %q (host sampled %d times), want the host's answer", out.Sample, out.Sampled)
	}
	if out.Updated != uri {
		t.Errorf("updated = %q, want %s", out.Updated, uri)
	}
}

// The TypeScript SDK host on a modern child's endpoint: the host speaks
// 2025-11-25, the child 2026-07-28; cancelling by AbortSignal reaches the
// child as notifications/cancelled.
func TestHTTPTypeScriptModernChild(t *testing.T) {
	d, base := startHTTPDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	out := runTSHTTP(t, base+"/servers/g/mcp", map[string]any{
		"echo":      call("echo", map[string]any{"message": "hi ts"}),
		"progress":  call("progress", map[string]any{"steps": 3}),
		"read":      "test://a",
		"prompt":    map[string]any{"name": "greet", "arguments": map[string]string{"name": "Ada"}},
		"subscribe": map[string]any{"uri": "test://a", "trigger": call("touch", map[string]any{"uri": "test://a"})},
		"sleep":     call("sleep", map[string]any{"ms": 600123}),
	}, func() { logsContain(t, c, "g", "sleep started 600123") })
	logsContain(t, c, "g", "sleep cancelled 600123")
	if out.Server.Name != "mcpd-test-gosdk" || out.Protocol != "2025-11-25" || out.SessionID == "" {
		t.Errorf("server %q protocol %q session %q", out.Server.Name, out.Protocol, out.SessionID)
	}
	if !has(out.Tools, "echo", "progress", "sleep", "touch") || !has(out.Prompts, "greet") || !has(out.Resources, "test://a", "test://b") {
		t.Errorf("tools %v prompts %v resources %v", out.Tools, out.Prompts, out.Resources)
	}
	if out.Echo != "hi ts" || out.ProgressResult != "done 3" || out.Read != "hello a" || out.Prompt != "Hello, Ada!" {
		t.Errorf("echo %q progress %q read %q prompt %q", out.Echo, out.ProgressResult, out.Read, out.Prompt)
	}
	checkTSProgress(t, out, 3)
	if out.Updated != "test://a" || !strings.HasPrefix(out.Cancel, "aborted") {
		t.Errorf("updated %q cancel %q", out.Updated, out.Cancel)
	}
}

// The TypeScript SDK host on the aggregate endpoint /mcp: tools and prompts
// carry server__ prefixes, resources route back to the server that listed
// them, and each call reaches its own child.
func TestHTTPTypeScriptAggregate(t *testing.T) {
	d, base := startHTTPDaemon(t, map[string]map[string]any{"everything": everythingServer(t), "g": gosdkServer("")})
	c := d.client()
	out := runTSHTTP(t, base+"/mcp", map[string]any{
		"echo":      call("everything__echo", map[string]any{"message": "hi all"}),
		"progress":  call("g__progress", map[string]any{"steps": 2}),
		"read":      "demo://resource/dynamic/text/1",
		"prompt":    map[string]any{"name": "g__greet", "arguments": map[string]string{"name": "Bo"}},
		"sample":    call("everything__trigger-sampling-request", map[string]any{"prompt": "hello", "maxTokens": 10}),
		"subscribe": map[string]any{"uri": "test://b", "trigger": call("g__touch", map[string]any{"uri": "test://b"})},
		"sleep":     call("g__sleep", map[string]any{"ms": 600321}),
	}, func() { logsContain(t, c, "g", "sleep started 600321") })
	logsContain(t, c, "g", "sleep cancelled 600321")
	if !has(out.Tools, "everything__echo", "g__echo", "g__sleep", "everything__trigger-sampling-request") || has(out.Tools, "echo") {
		t.Errorf("tools %v: want both servers' tools, prefixed", out.Tools)
	}
	if !has(out.Prompts, "g__greet", "everything__simple-prompt") || !has(out.Resources, "test://a") {
		t.Errorf("prompts %v resources %v", out.Prompts, out.Resources)
	}
	if out.Echo != "Echo: hi all" || out.ProgressResult != "done 2" || out.Prompt != "Hello, Bo!" || !strings.HasPrefix(out.Read, "Resource 1:") {
		t.Errorf("echo %q progress %q prompt %q read %q", out.Echo, out.ProgressResult, out.Prompt, out.Read)
	}
	checkTSProgress(t, out, 2)
	if !strings.Contains(out.Sample, "sampled by ts") || out.Sampled != 1 {
		t.Errorf("sample = %q (host sampled %d times)", out.Sample, out.Sampled)
	}
	if out.Updated != "test://b" || !strings.HasPrefix(out.Cancel, "aborted") {
		t.Errorf("updated %q cancel %q", out.Updated, out.Cancel)
	}
}
