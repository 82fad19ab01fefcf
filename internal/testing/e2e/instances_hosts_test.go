package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// asApp is ctx with the client name app in the request metadata.
func asApp(ctx context.Context, app string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "mcpd-client-name", app)
}

// hostAs registers a Host stream of app on c declaring roots (if roots)
// and sampling, answering every call with result; it ends with the test.
func hostAs(t *testing.T, c mcpdv1.McpdClient, app string, roots bool, result string) {
	t.Helper()
	ctx, cancel := context.WithCancel(asApp(context.Background(), app))
	t.Cleanup(cancel)
	stream, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := &mcpdv1.HostRegistration{Roots: roots, Sampling: true}
	if err := stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: reg}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("registration of %s: %v", app, err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				return
			}
			if call := msg.GetCall(); call != nil {
				_ = stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Answer{Answer: &mcpdv1.HostAnswer{
					CallId: call.GetCallId(), ResultJson: result}}})
			}
		}
	})
	t.Cleanup(func() {
		_ = stream.CloseSend()
		cancel()
		wg.Wait()
	})
}

func sampled(by string) string {
	b, _ := json.Marshal(map[string]any{"role": "assistant", "model": "m", "content": map[string]any{"type": "text", "text": "sampled by " + by}})
	return string(b)
}

// A sampling request of an instance's child goes to a host of the app the
// instance is for, even when another app's host registered later and the
// call came on another connection than the app's host; and the metrics
// name both instances.
func TestInstanceRequestsGoToTheirOwnersHost(t *testing.T) {
	skipShort(t)
	bridgeBins(t)
	dir := tempdir.Short(t)
	srv := fakeServer("legacy")
	srv["share"] = "client"
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"per": srv}})
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	msock := filepath.Join(dir, "metrics", "m.sock")
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), cfg, "--metrics-listen", "unix:"+msock)
	d.waitServing()

	hostAs(t, d.client(), "app-a", false, sampled("app-a"))
	callsB := d.client()
	hostAs(t, callsB, "app-b", false, sampled("app-b")) // the most recent host
	callsA := d.client()                                // app a's calls: not its host's connection
	sample := func(c mcpdv1.McpdClient, app string) string {
		t.Helper()
		resp, _, err := callTool(asApp(ctxT(t), app), c, &mcpdv1.CallToolRequest{Server: "per", Tool: "sample", ArgumentsJson: "{}"})
		if err != nil {
			t.Fatalf("sample for %s: %v", app, err)
		}
		return text(t, resp)
	}
	for _, app := range []string{"app-a", "app-b", "app-a"} {
		c := callsA
		if app == "app-b" {
			c = callsB
		}
		var got struct {
			Content struct{ Text string } `json:"content"`
		}
		if err := json.Unmarshal([]byte(sample(c, app)), &got); err != nil || got.Content.Text != "sampled by "+app {
			t.Errorf("%s's instance was sampled by %q (%v), want its own host", app, got.Content.Text, err)
		}
	}

	m := scrapeUnix(t, msock)
	if m[`mcpd_server_instances{server="per"}`] != 2 {
		t.Errorf("mcpd_server_instances = %v, want 2", m[`mcpd_server_instances{server="per"}`])
	}
	pid := os.Getpid()
	for app, calls := range map[string]float64{"app-a": 2, "app-b": 1} {
		key := `mcpd_instance_calls_total{instance="` + app + ` (pid ` + itoa(pid) + `)",server="per"}`
		if m[key] != calls {
			t.Errorf("%s = %v, want %v", key, m[key], calls)
		}
	}
}

// A host that declares roots and names none (no --root, no mcpd-root)
// reaches the instance of a "root" server for its first root, which runs
// in it.
func TestHostDeclaredRootPicksInstance(t *testing.T) {
	skipShort(t)
	ws := t.TempDir()
	srv := fakeServer("legacy")
	srv["share"] = "root"
	d := startBridgeDaemon(t, map[string]map[string]any{"ws": srv})
	c := d.client()
	roots, _ := json.Marshal(map[string]any{"roots": []any{
		map[string]any{"uri": "https://example.com/not-a-dir"},
		map[string]any{"uri": "file://" + ws, "name": "ws"},
	}})
	hostAs(t, c, "rooted", true, string(roots))
	resp, _, err := callTool(asApp(ctxT(t), "rooted"), c, &mcpdv1.CallToolRequest{Server: "ws", Tool: "echo", ArgumentsJson: `{"message":"hi"}`})
	if err != nil {
		t.Fatalf("call without a root: %v", err)
	}
	if got := text(t, resp); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	in := instancesOf(d, c, "ws")[ws]
	if in == nil {
		t.Fatalf("instances %v, want one for %s", instancesOf(d, c, "ws"), ws)
	}
	if cwd, err := os.Readlink("/proc/" + itoa(int(in.GetPid())) + "/cwd"); err != nil || cwd != ws {
		t.Errorf("instance cwd = %q (%v), want %q", cwd, err, ws)
	}
}

// mcpdctl bridge --root DIR, with the Go SDK's client as host on its
// stdio: the "root" server's child runs in DIR.
func TestBridgeRootRunsChildInRoot(t *testing.T) {
	skipShort(t)
	ws := t.TempDir()
	srv := fakeServer("legacy")
	srv["share"] = "root"
	d := startBridgeDaemon(t, map[string]map[string]any{"ws": srv})
	cmd := bridgeCommand(d, "--root", ws, "ws")
	client := mcp.NewClient(&mcp.Implementation{Name: "root-host", Version: "1.0.0"}, nil)
	ctx := ctxT(t)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "in root"}})
	if err != nil || res.IsError {
		t.Fatalf("echo through the bridge: %+v, %v", res, err)
	}
	if got := toolText(t, res); got != "in root" {
		t.Fatalf("echo = %q", got)
	}
	in := instancesOf(d, d.client(), "ws")[ws]
	if in == nil || in.GetPid() == 0 {
		t.Fatalf("instances %v, want one running for %s", instancesOf(d, d.client(), "ws"), ws)
	}
	if cwd, err := os.Readlink("/proc/" + itoa(int(in.GetPid())) + "/cwd"); err != nil || cwd != ws {
		t.Errorf("child cwd = %q (%v), want %q", cwd, err, ws)
	}
}

// The HTTP face's ?root=DIR, with the Go SDK's client as host: a "root"
// server runs one child per root, each in its root, as with mcpdctl
// bridge --root; a root that is not an absolute, clean path is a 400.
func TestHTTPRootRunsChildInRoot(t *testing.T) {
	skipShort(t)
	srv := fakeServer("legacy")
	srv["share"] = "root"
	d, base := startHTTPDaemon(t, map[string]map[string]any{"ws": srv})
	ctx := ctxT(t)
	roots := []string{t.TempDir(), t.TempDir()}
	for i, ws := range roots {
		for _, path := range []string{"/servers/ws/mcp", "/mcp"} {
			endpoint := base + path + "?root=" + url.QueryEscape(ws)
			client := mcp.NewClient(&mcp.Implementation{Name: "root-host", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint}, nil)
			if err != nil {
				t.Fatalf("connect to %s: %v", endpoint, err)
			}
			tool := map[string]string{"/servers/ws/mcp": "echo", "/mcp": "ws__echo"}[path]
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "in root"}})
			cs.Close()
			if err != nil || res.IsError {
				t.Fatalf("%s at %s: %+v, %v", tool, endpoint, res, err)
			}
		}
		ins := instancesOf(d, d.client(), "ws")
		if len(ins) != i+1 {
			t.Errorf("after root %d: instances %v, want %d", i+1, ins, i+1)
		}
		in := ins[ws]
		if in == nil || in.GetPid() == 0 {
			t.Fatalf("instances %v, want one running for %s", ins, ws)
		}
		if cwd, err := os.Readlink("/proc/" + itoa(int(in.GetPid())) + "/cwd"); err != nil || cwd != ws {
			t.Errorf("child cwd = %q (%v), want %q", cwd, err, ws)
		}
	}
	for _, bad := range []string{"", "rel/dir", roots[0] + "/../x", roots[0] + "/"} {
		req, err := http.NewRequest(http.MethodPost, base+"/servers/ws/mcp?root="+url.QueryEscape(bad),
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "want an absolute, clean directory path") {
			t.Errorf("root %q: %d %s, want 400 saying what a root is", bad, resp.StatusCode, body)
		}
	}
}
