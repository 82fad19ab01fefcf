//lint:file-ignore SA1019 the bridge must still carry sampling during its deprecation window

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	mcpgoclient "github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Binaries the bridge tests need besides mcpd, built once next to it.
var (
	bridgeBinsOnce sync.Once
	bridgeBinsErr  error
	mcpdctlBin     string
	gosdkBin       string
	appsBin        string
)

func bridgeBins(t *testing.T) {
	if t == nil { // building a config; the test called startBridgeDaemon's checks already or will
		bridgeBinsOnce.Do(buildBridgeBins)
		return
	}
	t.Helper()
	skipShort(t)
	bridgeBinsOnce.Do(buildBridgeBins)
	if bridgeBinsErr != nil {
		t.Fatal(bridgeBinsErr)
	}
}

func buildBridgeBins() {
	{
		if mcpdBin == "" {
			bridgeBinsErr = errors.New("mcpd not built (-short)")
			return
		}
		dir := filepath.Dir(mcpdBin) // removed by TestMain
		mcpdctlBin = filepath.Join(dir, "mcpdctl")
		gosdkBin = filepath.Join(dir, "gosdk")
		appsBin = filepath.Join(dir, "apps")
		for _, b := range []struct {
			out, pkg string
			race     bool
		}{{mcpdctlBin, "github.com/mcpd-dev/mcpd/cmd/mcpdctl", true}, {gosdkBin, "github.com/mcpd-dev/mcpd/internal/testing/servers/gosdk", false},
			{appsBin, "github.com/mcpd-dev/mcpd/internal/testing/servers/apps", false}} {
			args := []string{"build", "-o", b.out}
			if b.race {
				args = append(args, "-race")
			}
			cmd := exec.Command("go", append(args, b.pkg)...)
			if out, err := cmd.CombinedOutput(); err != nil {
				bridgeBinsErr = errors.New("go build " + b.pkg + ": " + err.Error() + "\n" + string(out))
				return
			}
		}
	}
}

// gosdkServer is a config entry for the go-sdk test server.
func gosdkServer(protocol string) map[string]any {
	bridgeBins(nil)
	e := map[string]any{"command": gosdkBin}
	if protocol != "" {
		e["protocol"] = protocol
	}
	return e
}

// fakeServer is a config entry for a fake server of the given mode.
func fakeServer(mode string) map[string]any {
	bin, args := fakemcp.Command()
	return map[string]any{"command": bin, "args": args, "env": map[string]string{fakemcp.EnvMode: mode}}
}

// startBridgeDaemon starts mcpd with the given raw config entries.
func startBridgeDaemon(t *testing.T, servers map[string]map[string]any) *daemon {
	t.Helper()
	bridgeBins(t)
	dir := tempdir.Short(t)
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), cfg)
	d.waitServing()
	return d
}

// bridgeCommand is `mcpdctl bridge NAMES...` against d.
func bridgeCommand(d *daemon, names ...string) *exec.Cmd {
	cmd := exec.Command(mcpdctlBin, append([]string{"--socket", d.socket, "bridge"}, names...)...)
	cmd.Env = daemonEnv()
	cmd.Stderr = os.Stderr
	return cmd
}

// hostRecorder is what a go-sdk host saw.
type hostRecorder struct {
	name     string
	progress atomic.Int64
	updates  chan string
}

// goHost connects a go-sdk client (the MCP host) to a bridge for names;
// legacy forces the initialize handshake. The session is closed, and the
// bridge process reaped, when the test ends.
func goHost(t *testing.T, d *daemon, name string, legacy bool, names ...string) (*mcp.ClientSession, *hostRecorder) {
	t.Helper()
	rec := &hostRecorder{name: name, updates: make(chan string, 64)}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0.0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { rec.progress.Add(1) },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			select {
			case rec.updates <- r.Params.URI:
			default:
			}
		},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "model-" + name, Content: &mcp.TextContent{Text: "sampled by " + name}}, nil
		},
	})
	var opts *mcp.ClientSessionOptions
	if legacy {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: bridgeCommand(d, names...)}, opts)
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, rec
}

func toolText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "")
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
	t.Helper()
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return toolText(t, res)
}

// logsContain polls the server's stderr (as mcpd keeps it) for want.
func logsContain(t *testing.T, c mcpdv1.McpdClient, server, want string) {
	t.Helper()
	poll(t, "stderr line "+want, func() (bool, error) {
		resp, err := c.GetLogs(ctxT(t), &mcpdv1.GetLogsRequest{Name: server, Lines: 1000})
		if err != nil {
			return false, err
		}
		for _, l := range resp.GetLines() {
			if strings.Contains(l.GetText(), want) {
				return true, nil
			}
		}
		return false, nil
	})
}

// touchUntilUpdated calls touch on uri until the host hears of an update
// (the subscription upstream is set up asynchronously after a restart).
func touchUntilUpdated(t *testing.T, touch func(), updates <-chan string, uri string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		touch()
		select {
		case got := <-updates:
			if got == uri {
				return
			}
		case <-time.After(200 * time.Millisecond): // retry interval, not a correctness wait
		}
	}
	t.Fatalf("no notifications/resources/updated for %s", uri)
}

// exerciseGoHost runs the common scenario on a go-sdk host of server g.
func exerciseGoHost(t *testing.T, d *daemon, cs *mcp.ClientSession, rec *hostRecorder) {
	c := d.client()
	tools, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	for _, want := range []string{"echo", "sleep", "progress", "touch"} {
		if !strings.Contains(","+strings.Join(names, ",")+",", ","+want+",") {
			t.Errorf("tools = %v, want %s", names, want)
		}
	}
	if got := callText(t, cs, "echo", map[string]any{"message": "hi " + rec.name}); got != "hi "+rec.name {
		t.Errorf("echo = %q", got)
	}
	rr, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: "test://a"})
	if err != nil || len(rr.Contents) == 0 || rr.Contents[0].Text != "hello a" {
		t.Errorf("read test://a = %+v, %v", rr, err)
	}
	pr, err := cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}})
	if err != nil || len(pr.Messages) == 0 || pr.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Ada!" {
		t.Errorf("prompt greet = %+v, %v", pr, err)
	}

	// Progress reaches the host with its own token.
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{"steps": 3}}
	params.SetProgressToken("host-token")
	if _, err := cs.CallTool(ctxT(t), params); err != nil {
		t.Fatal(err)
	}
	poll(t, "3 progress notifications", func() (bool, error) { return rec.progress.Load() >= 3, nil })

	// Subscribe, then an update reaches the host.
	if err := cs.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: "test://a"}); err != nil {
		t.Fatal(err)
	}
	touchUntilUpdated(t, func() { callText(t, cs, "touch", map[string]any{"uri": "test://a"}) }, rec.updates, "test://a")

	// Cancelling a long call reaches the child.
	ms := 600000 + int(time.Now().UnixNano()%1000)
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": ms}})
		done <- err
	}()
	logsContain(t, c, "g", "sleep started "+itoa(ms))
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled call succeeded")
	}
	logsContain(t, c, "g", "sleep cancelled "+itoa(ms))
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestBridgeGoSDKModern(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	cs, rec := goHost(t, d, "modern-host", false, "g")
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("negotiated %q, want modern", v)
	}
	exerciseGoHost(t, d, cs, rec)
}

func TestBridgeGoSDKLegacy(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	cs, rec := goHost(t, d, "legacy-host", true, "g")
	res := cs.InitializeResult()
	if res.ProtocolVersion != "2025-11-25" || res.ServerInfo.Name != "mcpd-test-gosdk" || res.Instructions != "mcpd test server (go-sdk)" {
		t.Errorf("initialize = %+v, want the child's identity at 2025-11-25", res)
	}
	exerciseGoHost(t, d, cs, rec)
}

func TestBridgeSharesChildAndCache(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	a, _ := goHost(t, d, "a", true, "g")
	b, _ := goHost(t, d, "b", false, "g")
	for _, cs := range []*mcp.ClientSession{a, b, a} {
		if _, err := cs.ListTools(ctxT(t), nil); err != nil {
			t.Fatal(err)
		}
	}
	pid := d.serverStatus(c, "g").GetPid()
	// The child counts the tools/list requests it served: the bridges'
	// lists (and their start-up) came from mcpd's cache after the first.
	if got := callText(t, a, "count", nil); got != "1" {
		t.Errorf("child served %s tools/list, want 1", got)
	}
	if got := d.serverStatus(c, "g"); got.GetPid() != pid || got.GetCache().GetHits() < 2 {
		t.Errorf("pid %d→%d, cache %+v: want one child and cache hits", pid, got.GetPid(), got.GetCache())
	}
}

func TestBridgeServerToClientRequests(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{
		"f":  fakeServer("legacy"),
		"gl": gosdkServer("legacy"),
	})
	c := d.client()
	// No host: mcpd answers -32601.
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "f", Tool: "sample"})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, resp); !strings.HasPrefix(got, "error -32601") {
		t.Errorf("sample without host = %q, want -32601", got)
	}

	a, _ := goHost(t, d, "A", true, "f", "gl")
	b, _ := goHost(t, d, "B", true, "f", "gl")
	// Each request reaches the host whose call triggered it, though B
	// registered last.
	for _, h := range []struct {
		cs   *mcp.ClientSession
		name string
	}{{a, "A"}, {b, "B"}, {a, "A"}} {
		if got := callText(t, h.cs, "f__sample", nil); !strings.Contains(got, "model-"+h.name) {
			t.Errorf("sample via %s = %q", h.name, got)
		}
		if got := callText(t, h.cs, "gl__askname", nil); got != "hello "+h.name {
			t.Errorf("askname via %s = %q", h.name, got)
		}
	}
}

func TestBridgeInputRequired(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("modern")})
	for _, legacy := range []bool{false, true} {
		name := map[bool]string{false: "Modern", true: "Legacy"}[legacy]
		cs, _ := goHost(t, d, name, legacy, "g")
		if got := callText(t, cs, "askname", nil); got != "hello "+name {
			t.Errorf("askname via %s host = %q", name, got)
		}
	}
}

func TestBridgeSurvivesDaemonRestart(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	cs, rec := goHost(t, d, "host", true, "g")
	if err := cs.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: "test://b"}); err != nil {
		t.Fatal(err)
	}
	touchUntilUpdated(t, func() { callText(t, cs, "touch", map[string]any{"uri": "test://b"}) }, rec.updates, "test://b")

	d.status(d.client()) // record the child for the leak check
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.wait()
	// While mcpd is down the host gets a clear error.
	_, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}})
	if err == nil || !strings.Contains(err.Error(), "mcpd is not running") {
		t.Errorf("call while mcpd is down: %v", err)
	}

	d2 := spawnDaemon(t, d.socket, d.config)
	d2.waitServing()
	if got := callText(t, cs, "echo", map[string]any{"message": "back"}); got != "back" {
		t.Errorf("echo after restart = %q", got)
	}
	touchUntilUpdated(t, func() { callText(t, cs, "touch", map[string]any{"uri": "test://b"}) }, rec.updates, "test://b")
	d2.status(d2.client())
}

func TestBridgeAggregatesByPrefix(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{
		"one":   gosdkServer(""),
		"two":   gosdkServer("legacy"),
		"three": fakeServer("modern"),
	})
	cs, _ := goHost(t, d, "host", false, "one", "two", "three")
	tools, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, tl := range tools.Tools {
		got[tl.Name] = true
	}
	for _, want := range []string{"one__echo", "two__echo", "three__echo"} {
		if !got[want] {
			t.Errorf("tools lack %s: %v", want, got)
		}
	}
	if got["echo"] {
		t.Error("unprefixed echo listed")
	}
	for _, s := range []string{"one", "two"} {
		if got := callText(t, cs, s+"__echo", map[string]any{"message": "via " + s}); got != "via "+s {
			t.Errorf("%s__echo = %q", s, got)
		}
	}
	if got := callText(t, cs, "three__echo", map[string]any{"message": "via three"}); got != "via three" {
		t.Errorf("three__echo = %q", got)
	}
	pr, err := cs.GetPrompt(ctxT(t), &mcp.GetPromptParams{Name: "two__greet", Arguments: map[string]string{"name": "Bo"}})
	if err != nil || pr.Messages[0].Content.(*mcp.TextContent).Text != "Hello, Bo!" {
		t.Errorf("two__greet = %+v, %v", pr, err)
	}
	// Resources route back to the server that listed them.
	if _, err := cs.ListResources(ctxT(t), nil); err != nil {
		t.Fatal(err)
	}
	rr, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: "fake://hello"})
	if err != nil || len(rr.Contents) == 0 {
		t.Errorf("read fake://hello = %+v, %v", rr, err)
	}
}

func TestBridgeMcpGoClient(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	cl, err := mcpgoclient.NewStdioMCPClient(mcpdctlBin, daemonEnv(), "--socket", d.socket, "bridge", "g")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	progress, updates := recordMcpGoNotifications(cl)
	// Start installs the notification handlers (the transport already runs).
	if err := cl.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.Initialize(ctxT(t), mcpgo.InitializeRequest{}); err != nil {
		t.Fatal(err)
	}
	call := func(ctx context.Context, name string, args map[string]any, meta *mcpgo.Meta) (string, error) {
		res, err := cl.CallTool(ctx, mcpgo.CallToolRequest{Params: mcpgo.CallToolParams{Name: name, Arguments: args, Meta: meta}})
		if err != nil {
			return "", err
		}
		var s string
		for _, ct := range res.Content {
			if tc, ok := ct.(mcpgo.TextContent); ok {
				s += tc.Text
			}
		}
		return s, nil
	}
	tools, err := cl.ListTools(ctxT(t), mcpgo.ListToolsRequest{})
	if err != nil || len(tools.Tools) < 5 {
		t.Fatalf("tools = %+v, %v", tools, err)
	}
	if got, err := call(ctxT(t), "echo", map[string]any{"message": "hi mcp-go"}, nil); got != "hi mcp-go" {
		t.Errorf("echo = %q, %v", got, err)
	}
	rr, err := cl.ReadResource(ctxT(t), mcpgo.ReadResourceRequest{Params: mcpgo.ReadResourceParams{URI: "test://a"}})
	if err != nil || len(rr.Contents) == 0 || rr.Contents[0].(mcpgo.TextResourceContents).Text != "hello a" {
		t.Errorf("read = %+v, %v", rr, err)
	}
	pr, err := cl.GetPrompt(ctxT(t), mcpgo.GetPromptRequest{Params: mcpgo.GetPromptParams{Name: "greet", Arguments: map[string]string{"name": "Ada"}}})
	if err != nil || len(pr.Messages) == 0 || pr.Messages[0].Content.(mcpgo.TextContent).Text != "Hello, Ada!" {
		t.Errorf("prompt = %+v, %v", pr, err)
	}
	if _, err := call(ctxT(t), "progress", map[string]any{"steps": 3}, &mcpgo.Meta{ProgressToken: "mcpgo-token"}); err != nil {
		t.Fatal(err)
	}
	poll(t, "3 progress notifications", func() (bool, error) { return progress.Load() >= 3, nil })

	lctx, stopListen := context.WithCancel(ctxT(t))
	stop, err := cl.ListenAsync(lctx, mcpgo.SubscriptionFilter{ResourceSubscriptions: []string{"test://a"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	touchUntilUpdated(t, func() { call(ctxT(t), "touch", map[string]any{"uri": "test://a"}, nil) }, updates, "test://a")
	stopListen()
	stop()

	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, err := call(ctx, "sleep", map[string]any{"ms": 600456}, nil)
		done <- err
	}()
	logsContain(t, c, "g", "sleep started 600456")
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled call succeeded")
	}
	logsContain(t, c, "g", "sleep cancelled 600456")
}

func TestBridgeTypeScriptClient(t *testing.T) {
	bridgeBins(t)
	node, err := exec.LookPath("node")
	root := filepath.Join("..", "..", "..")
	if _, serr := os.Stat(filepath.Join(root, "node_modules", "@modelcontextprotocol", "sdk")); err != nil || serr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or @modelcontextprotocol/sdk missing in CI (npm ci)")
		}
		t.Skip("node or @modelcontextprotocol/sdk missing: run npm ci")
	}
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	cmd := exec.Command(node, filepath.Join("testdata", "tsclient.mjs"), mcpdctlBin, "--socket", d.socket, "bridge", "g")
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
	var phase struct{ Phase string }
	if err := dec.Decode(&phase); err != nil || phase.Phase != "sleeping" {
		t.Fatalf("ts client: %+v, %v", phase, err)
	}
	logsContain(t, c, "g", "sleep started 600123")
	stdin.Write([]byte("cancel\n"))
	var out struct {
		Server   struct{ Name string }
		Tools    []string
		Echo     string
		Read     string
		Prompt   string
		Progress int
		Updated  string
		Cancel   string
	}
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("ts client result: %v", err)
	}
	logsContain(t, c, "g", "sleep cancelled 600123")
	if out.Server.Name != "mcpd-test-gosdk" || len(out.Tools) < 5 || out.Echo != "hi ts" || out.Read != "hello a" ||
		out.Prompt != "Hello, Ada!" || out.Progress != 3 || out.Updated != "test://a" || !strings.HasPrefix(out.Cancel, "aborted") {
		t.Errorf("ts client saw %+v", out)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("ts client: %v", err)
	}
}

// recordMcpGoNotifications counts an mcp-go client's progress
// notifications and passes on the URIs of its resource updates.
func recordMcpGoNotifications(cl *mcpgoclient.Client) (*atomic.Int64, chan string) {
	progress := new(atomic.Int64)
	updates := make(chan string, 64)
	cl.OnNotification(func(n mcpgo.JSONRPCNotification) {
		switch n.Method {
		case "notifications/progress":
			progress.Add(1)
		case "notifications/resources/updated":
			uri, _ := n.Params.AdditionalFields["uri"].(string)
			select {
			case updates <- uri:
			default:
			}
		}
	})
	return progress, updates
}
