//lint:file-ignore SA1019 the bridge must still carry sampling and logging during their deprecation window

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// connectHost connects a go-sdk client with opts (the MCP host) to the
// bridge cmd; legacy forces the initialize handshake. The session is
// closed, and the bridge reaped, when the test ends.
func connectHost(t *testing.T, cmd *exec.Cmd, name string, legacy bool, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1.0.0"}, opts)
	var sopts *mcp.ClientSessionOptions
	if legacy {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, sopts)
	if err != nil {
		t.Fatalf("connect %s: %v", name, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// answering are host options that answer elicitation and sampling with the
// host's name.
func answering(name string) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			return &mcp.CreateMessageResult{Role: "assistant", Model: "model-" + name, Content: &mcp.TextContent{Text: "sampled by " + name}}, nil
		},
	}
}

// A legacy child's elicitation/create and sampling/createMessage reach a
// modern host as input_required results of its call, and the answer gets
// back to the child, which then completes the same call.
func TestBridgeModernHostAnswersLegacyChild(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{
		"gl": gosdkServer("legacy"),
		"f":  fakeServer("legacy"),
	})
	a := connectHost(t, bridgeCommand(d, "gl", "f"), "A", false, answering("A"))
	b := connectHost(t, bridgeCommand(d, "gl", "f"), "B", false, answering("B"))
	if v := a.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("host negotiated %q, want modern", v)
	}
	// Each request reaches the host whose call triggered it.
	for _, h := range []struct {
		cs   *mcp.ClientSession
		name string
	}{{a, "A"}, {b, "B"}, {a, "A"}} {
		if got := callText(t, h.cs, "gl__askname", nil); got != "hello "+h.name {
			t.Errorf("askname via %s = %q", h.name, got)
		}
		if got := callText(t, h.cs, "f__sample", nil); !strings.Contains(got, "model-"+h.name) {
			t.Errorf("sample via %s = %q", h.name, got)
		}
	}
	// The call was sent to the child once: the retry was not forwarded.
	c := d.client()
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "f", Tool: "stats"})
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Methods map[string]int `json:"methods"`
	}
	if err := json.Unmarshal([]byte(text(t, resp)), &st); err != nil {
		t.Fatal(err)
	}
	// 3 sample calls and this stats call.
	if got := st.Methods["tools/call"]; got != 4 {
		t.Errorf("child got %d tools/call, want 4 (3 sample + stats)", got)
	}

	// A modern host that declares nothing cannot be asked: the child gets
	// -32601, as with no host at all.
	n := connectHost(t, bridgeCommand(d, "f"), "N", false, nil)
	if got := callText(t, n, "sample", nil); !strings.HasPrefix(got, "error -32601") {
		t.Errorf("sample via a host declaring nothing = %q, want -32601", got)
	}
}

// A bridge started before mcpd with --wait 0 answers the handshake,
// reports mcpd down clearly on calls at once, and works once mcpd is
// there.
func TestBridgeStartsBeforeMcpd(t *testing.T) {
	bridgeBins(t)
	dir := tempdir.Short(t)
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"g": gosdkServer("")}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	absent := &daemon{socket: filepath.Join(dir, "run", "mcpd.sock")}
	for _, legacy := range []bool{false, true} {
		name := map[bool]string{false: "modern", true: "legacy"}[legacy]
		t.Run(name, func(t *testing.T) {
			changed := make(chan struct{}, 16)
			cs := connectHost(t, bridgeCommand(absent, "--wait", "0", "g"), name, legacy, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
					select {
					case changed <- struct{}{}:
					default:
					}
				},
			})
			_, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "x"}})
			if err == nil || !strings.Contains(err.Error(), "mcpd is not running") {
				t.Fatalf("call without mcpd: %v, want \"mcpd is not running\"", err)
			}
			if _, err := cs.ListTools(ctxT(t), nil); err == nil || !strings.Contains(err.Error(), "mcpd is not running") {
				t.Errorf("tools/list without mcpd: %v", err)
			}

			d := spawnDaemon(t, absent.socket, cfg)
			d.waitServing()
			if got := callText(t, cs, "echo", map[string]any{"message": "back"}); got != "back" {
				t.Errorf("echo once mcpd runs = %q", got)
			}
			// The host is told to fetch its lists again.
			select {
			case <-changed:
			case <-ctxT(t).Done():
				t.Error("no tools/list_changed once mcpd runs")
			}
			tools, err := cs.ListTools(ctxT(t), nil)
			if err != nil || len(tools.Tools) < 5 {
				t.Errorf("tools once mcpd runs = %v, %v", tools, err)
			}
			d.status(d.client()) // record the child for the leak check
			if err := d.cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			d.wait()
		})
	}
}

// A child's log message during a call reaches the host behind the bridge
// whose call it belongs to, not mcpd's watchers; one that cannot be
// attributed reaches the watchers.
func TestBridgeLogMessagesReachTheirCaller(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{
		"legacy": fakeServer("legacy"),
		"modern": fakeServer("modern"),
	})
	c := d.client()
	wctx, stopWatch := context.WithCancel(ctxT(t))
	defer stopWatch()
	watch, err := c.Subscribe(wctx, &mcpdv1.SubscribeRequest{Servers: []string{"legacy", "modern"}, LogMessages: true})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := watch.Recv(); err != nil || ev.GetAck() == nil {
		t.Fatalf("subscribe: %v, %v", ev, err)
	}
	var (
		mu      sync.Mutex
		watched []string
	)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer stopWatch()
	wg.Go(func() {
		for {
			ev, err := watch.Recv()
			if err != nil {
				return
			}
			if ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE {
				mu.Lock()
				watched = append(watched, ev.GetParamsJson())
				mu.Unlock()
			}
		}
	})
	watchedHas := func(data string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range watched {
			if strings.Contains(w, data) {
				return true
			}
		}
		return false
	}

	for _, legacyHost := range []bool{false, true} {
		host := map[bool]string{false: "modern-host", true: "legacy-host"}[legacyHost]
		got := make(chan string, 16)
		cs := connectHost(t, bridgeCommand(d, "legacy", "modern"), host, legacyHost, &mcp.ClientOptions{
			LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
				data, _ := json.Marshal(r.Params.Data)
				got <- string(data)
			},
		})
		if legacyHost {
			if err := cs.SetLoggingLevel(ctxT(t), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
		}
		for _, server := range []string{"legacy", "modern"} {
			data := host + " via " + server
			params := &mcp.CallToolParams{Name: server + "__log", Arguments: map[string]any{"data": data}}
			if !legacyHost {
				params.Meta = mcp.Meta{"io.modelcontextprotocol/logLevel": "debug"}
			}
			if _, err := cs.CallTool(ctxT(t), params); err != nil {
				t.Fatal(err)
			}
			// The message precedes the response on the host's stdin, but
			// the go-sdk client runs notification handlers asynchronously.
			select {
			case m := <-got:
				if !strings.Contains(m, data) {
					t.Errorf("%s got %s, want %q", host, m, data)
				}
			case <-ctxT(t).Done():
				t.Fatalf("%s got no log message from %s", host, server)
			}
		}
	}
	// Not opted in: the message is nobody's call's, so watchers get it.
	cs := connectHost(t, bridgeCommand(d, "modern"), "quiet", false, &mcp.ClientOptions{
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) {
			t.Error("a host that set no level got a log message")
		},
	})
	callText(t, cs, "log", map[string]any{"data": "for watchers"})
	poll(t, "the watcher gets the unattributed message", func() (bool, error) { return watchedHas("for watchers"), nil })
	for _, h := range []string{"modern-host", "legacy-host"} {
		if watchedHas(h) {
			t.Errorf("a watcher got the message of %s's call", h)
		}
	}
}

// Two servers whose prefixed tool names collide after shortening to the
// 128-character limit: the bridge refuses to start, naming both.
func TestBridgeAggregationClashAtStartup(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{
		"x_": gosdkServer(""),
		"x":  gosdkServer(""),
	})
	c := d.client()
	long := strings.Repeat("t", 125)
	// "x_" + "__" + "_ttt…" and "x" + "__" + "__ttt…" are the same
	// 130-character name, shortened to the same 128 characters.
	for server, tool := range map[string]string{"x_": "_" + long, "x": "__" + long} {
		resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: server, Tool: "add_tool", ArgumentsJson: `{"name":"` + tool + `"}`})
		if err != nil || resp.GetError() != nil {
			t.Fatalf("add_tool on %s: %v %v", server, resp.GetError(), err)
		}
	}
	cmd := bridgeCommand(d, "x_", "x")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err == nil {
		t.Fatalf("bridge started despite the clash; stdout %q", out)
	}
	msg := stderr.String()
	if !strings.Contains(msg, "clashes") || !strings.Contains(msg, `server "x"`) || !strings.Contains(msg, `server "x_"`) {
		t.Errorf("bridge error = %q, want the clash named", msg)
	}
	if len(out) != 0 {
		t.Errorf("bridge wrote %q to stdout", out)
	}
}

// A host that writes its requests and closes stdin while mcpd is not
// running gets every answer, each saying mcpd is not running (not that the
// host left), and the bridge exits 0.
func TestBridgePipedRequestsWithoutMcpd(t *testing.T) {
	bridgeBins(t)
	absent := &daemon{socket: filepath.Join(tempdir.Short(t), "run", "mcpd.sock")}
	cmd := bridgeCommand(absent, "g")
	cmd.Stderr = nil
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`,
	}, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bridge: %v", err)
	}
	answered := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m struct {
			ID    json.RawMessage `json:"id"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		answered[string(m.ID)] = true
		if string(m.ID) != "1" && (m.Error == nil || !strings.Contains(m.Error.Message, "mcpd is not running")) {
			t.Errorf("answer %s, want an error saying mcpd is not running", line)
		}
	}
	if !answered["1"] || !answered["2"] || !answered["3"] {
		t.Errorf("answered %v, want 1, 2 and 3:\n%s", answered, out)
	}
}

// A host that launches the bridge before mcpd (at login) and sends
// initialize and tools/list at once gets both answered: initialize at
// once, tools/list once mcpd, started a second later, runs (the bridge's
// --wait, 10s by default).
func TestBridgeWaitsForMcpdAtStart(t *testing.T) {
	bridgeBins(t)
	dir := tempdir.Short(t)
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{"g": fakeServer("legacy")}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	absent := &daemon{socket: filepath.Join(dir, "run", "mcpd.sock")}
	cmd := bridgeCommand(absent, "g")
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
	answers, done := make(chan string), make(chan struct{})
	var reader sync.WaitGroup
	defer func() {
		close(done)
		stdin.Close()
		cmd.Wait()
		reader.Wait()
	}()
	reader.Go(func() { // ends when the test does, or the bridge's stdout
		defer close(answers)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			select {
			case answers <- sc.Text():
			case <-done:
				return
			}
		}
	})
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
	} {
		if _, err := io.WriteString(stdin, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	next := func() map[string]json.RawMessage {
		t.Helper()
		for {
			select {
			case line, ok := <-answers:
				if !ok {
					t.Fatal("the bridge closed stdout")
				}
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("line %q: %v", line, err)
				}
				if m["id"] != nil {
					return m // notifications (list changes) aside
				}
			case <-ctxT(t).Done():
				t.Fatal("no answer from the bridge")
			}
		}
	}
	if m := next(); string(m["id"]) != "1" || m["result"] == nil {
		t.Fatalf("initialize without mcpd: %v", m)
	}
	// The scenario is mcpd starting a while after the host: a real delay,
	// well within the bridge's wait.
	time.Sleep(time.Second)
	d := spawnDaemon(t, absent.socket, cfg)
	d.waitServing()
	m := next()
	if string(m["id"]) != "2" || !strings.Contains(string(m["result"]), `"echo"`) {
		t.Fatalf("tools/list sent before mcpd ran: %s %s %s, want the fake's tools", m["id"], m["result"], m["error"])
	}
	d.status(d.client()) // record the child for the leak check
}
