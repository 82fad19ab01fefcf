package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// startAuditDaemon starts mcpd with server fk (a legacy fake), the audit
// log recording full arguments, and extra flags; it returns the daemon and
// its audit log's path.
func startAuditDaemon(t *testing.T, extra ...string) (*daemon, string) {
	t.Helper()
	dir := tempdir.Short(t)
	cfg := map[string]any{
		"mcpServers": map[string]any{"fk": fakeServer("legacy")},
		"audit":      map[string]any{"arguments": true},
	}
	data, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), path, append([]string{"--state-dir", state}, extra...)...)
	d.waitServing()
	return d, filepath.Join(state, audit.FileName)
}

// readAudit returns the records of the log; every line must be whole.
func readAudit(t *testing.T, path string) []audit.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && data[len(data)-1] != '\n' {
		t.Fatalf("audit log ends in a partial line: %q", data[max(0, len(data)-100):])
	}
	return parseAudit(t, data)
}

// readAuditAfterKill reads the log of an mcpd that was SIGKILLed: the
// kernel may have cut its last write(2) short at a page, so a partial last
// line is dropped (as audit.ReadFile skips it, and the next Open ends it).
// Its records were never acknowledged: their Writes had not returned.
func readAuditAfterKill(t *testing.T, path string) []audit.Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		t.Logf("dropping a partial last line of %d bytes", len(data)-i-1)
		data = data[:i+1]
	}
	return parseAudit(t, data)
}

func parseAudit(t *testing.T, data []byte) []audit.Record {
	t.Helper()
	var out []audit.Record
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if line == "" {
			continue
		}
		var r audit.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d is not a record: %v: %q", i+1, err, line)
		}
		out = append(out, r)
	}
	return out
}

func echoMessage(r audit.Record) string {
	var a struct{ Message string }
	_ = json.Unmarshal(r.Args, &a)
	return a.Message
}

// gRPC, mcpdctl bridge and the HTTP face each write a record naming the
// front and the app.
func TestAuditThreeFronts(t *testing.T) {
	skipShort(t)
	bridgeBins(t)
	d, path := startAuditDaemon(t, "--http-listen", "127.0.0.1:0")
	c := d.client()
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", "grpc-app")
	if _, _, err := callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "fk", Tool: "echo", ArgumentsJson: echoArgs("via-grpc")}); err != nil {
		t.Fatal(err)
	}
	cs, _ := goHost(t, d, "bridge-host", false, "fk")
	callText(t, cs, "echo", map[string]any{"message": "via-bridge"})

	urls, _ := httpStatus(t, d)
	base, _ := strings.CutSuffix(urls[0], "/mcp")
	client := mcp.NewClient(&mcp.Implementation{Name: "http-host", Version: "1.0.0"}, nil)
	hs, err := client.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: base + "/servers/fk/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer hs.Close()
	if _, err := hs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "via-http"}}); err != nil {
		t.Fatal(err)
	}

	byMsg := map[string]audit.Record{}
	for _, r := range readAudit(t, path) {
		byMsg[echoMessage(r)] = r
	}
	for msg, want := range map[string]struct{ front, app string }{
		"via-grpc": {audit.FrontGRPC, "grpc-app"}, "via-bridge": {audit.FrontBridge, "bridge-host"}, "via-http": {audit.FrontHTTP, "http-host"},
	} {
		r, ok := byMsg[msg]
		if !ok {
			t.Fatalf("no record of %s; records %v", msg, byMsg)
		}
		if r.Front != want.front || !strings.Contains(r.App, want.app) || r.Server != "fk" || r.Method != "tools/call" ||
			r.Name != "echo" || r.Outcome != audit.OutcomeResult || !strings.HasPrefix(r.ArgsDigest, "sha256:") {
			t.Errorf("%s: record %+v, want front %s app %s", msg, r, want.front, want.app)
		}
		if r.UID != os.Getuid() {
			t.Errorf("%s: uid %d, want %d", msg, r.UID, os.Getuid())
		}
		if msg != "via-http" && r.Pid <= 0 {
			t.Errorf("%s: pid %d", msg, r.Pid)
		}
	}
}

// loadCall is one call of the concurrent load.
func loadCall(ctx context.Context, c mcpdv1.McpdClient, app string, i int) (msg string, wantOutcome string, err error) {
	msg = fmt.Sprintf("%s-%d", app, i)
	tool, want := "echo", audit.OutcomeResult
	if i%3 == 0 {
		tool, want = "nosuchtool", audit.OutcomeRPCError
	}
	_, _, err = callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "fk", Tool: tool, ArgumentsJson: echoArgs(msg),
		Options: &mcpdv1.CallOptions{Client: &mcpdv1.ClientInfo{Name: app, Version: "1"}}})
	return msg, want, err
}

// Every call of a concurrent load has exactly one record with its app and
// outcome; SIGKILL in the middle of more load leaves whole lines holding
// every call an app saw complete.
func TestAuditConcurrentLoadAndSIGKILL(t *testing.T) {
	skipShort(t)
	d, path := startAuditDaemon(t)
	c := d.client()
	type done struct{ app, outcome string }
	var mu sync.Mutex
	completed := map[string]done{}
	var wg sync.WaitGroup
	for g := range 8 {
		app := fmt.Sprintf("app%d", g%2)
		wg.Go(func() {
			for i := range 25 {
				msg, want, err := loadCall(ctxT(t), c, app, g*100+i)
				if err != nil {
					t.Errorf("call %s: %v", msg, err)
					return
				}
				mu.Lock()
				completed[msg] = done{app, want}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	counts := map[string]int{}
	for _, r := range readAudit(t, path) {
		m := echoMessage(r)
		counts[m]++
		if w, ok := completed[m]; ok && (r.App != w.app || r.Outcome != w.outcome) {
			t.Errorf("%s: app %q outcome %q, want %q %q", m, r.App, r.Outcome, w.app, w.outcome)
		}
		if r.Outcome == audit.OutcomeRPCError && r.RPCCode != -32602 {
			t.Errorf("%s: rpc code %d", m, r.RPCCode)
		}
	}
	for m := range completed {
		if counts[m] != 1 {
			t.Errorf("%s has %d records, want 1", m, counts[m])
		}
	}
	if len(counts) != len(completed) {
		t.Errorf("%d records for %d calls", len(counts), len(completed))
	}

	// More load, and SIGKILL once some of it completed.
	clear(completed)
	var n atomic.Int64
	killed := make(chan struct{})
	for g := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				msg, _, err := loadCall(context.Background(), c, "kill", g*10000+i)
				if err != nil {
					return // mcpd is gone
				}
				mu.Lock()
				completed[msg] = done{}
				mu.Unlock()
				if n.Add(1) == 100 {
					d.cmd.Process.Kill()
					close(killed)
				}
			}
		})
	}
	<-killed
	wg.Wait()
	d.wait()
	have := map[string]bool{}
	for _, r := range readAuditAfterKill(t, path) {
		have[echoMessage(r)] = true
	}
	mu.Lock()
	defer mu.Unlock()
	for m := range completed {
		if !have[m] {
			t.Errorf("call %s completed but has no record after SIGKILL", m)
		}
	}
	t.Logf("%d calls completed before SIGKILL, all recorded", len(completed))
}

// With --otlp-endpoint, the child receives a traceparent in _meta carrying
// the app's trace id (the collector need not be up: spans are exported in
// the background).
func TestTraceparentReachesChild(t *testing.T) {
	skipShort(t)
	d, _ := startAuditDaemon(t, "--otlp-endpoint", "127.0.0.1:9")
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "traceparent", tp)
	resp, _, err := callTool(ctx, d.client(), &mcpdv1.CallToolRequest{Server: "fk", Tool: "meta", ArgumentsJson: `{}`})
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	if err := json.Unmarshal([]byte(text(t, resp)), &meta); err != nil {
		t.Fatal(err)
	}
	got, _ := meta["traceparent"].(string)
	if len(got) != 55 || got[3:35] != "4bf92f3577b34da6a3ce929d0e0e4736" || got == tp {
		t.Fatalf("child's _meta %v: want a traceparent of the app's trace with mcpd's span", meta)
	}
}
