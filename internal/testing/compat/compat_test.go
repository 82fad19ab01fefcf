// Package compat checks mcpd's transport and session against real MCP server
// implementations: the official Go SDK, mcp-go, and the reference TypeScript
// servers from npm (server-everything, server-memory). It holds tests only.
package compat

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
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// Paths filled in by TestMain.
var (
	repoRoot   string // the module root
	gosdkBin   string // built internal/testing/servers/gosdk
	mcpgoBin   string // built internal/testing/servers/mcpgo
	nodeBin    string // node, empty when the npm servers are unavailable
	npmMissing string // why the npm servers are unavailable, empty if they are there
)

const (
	everythingJS = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"
	memoryJS     = "node_modules/@modelcontextprotocol/server-memory/dist/index.js"
)

func TestMain(m *testing.M) {
	dir, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "compat: %v\n", err)
		if dir != "" {
			os.RemoveAll(dir)
		}
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// setup finds the repository, builds the Go test servers into a temp dir and
// locates node and the npm servers.
func setup() (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find go: %w", err)
	}
	out, err := exec.Command(goBin, "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	repoRoot = filepath.Dir(strings.TrimSpace(string(out)))
	dir, err := os.MkdirTemp("", "mcpd-compat-")
	if err != nil {
		return "", fmt.Errorf("temp dir: %w", err)
	}
	gosdkBin = filepath.Join(dir, "gosdk")
	mcpgoBin = filepath.Join(dir, "mcpgo")
	for bin, pkg := range map[string]string{gosdkBin: "./internal/testing/servers/gosdk", mcpgoBin: "./internal/testing/servers/mcpgo"} {
		cmd := exec.Command(goBin, "build", "-o", bin, pkg)
		cmd.Dir = repoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			return dir, fmt.Errorf("go build %s: %w\n%s", pkg, err, out)
		}
	}
	if _, err := os.Stat(filepath.Join(repoRoot, everythingJS)); err != nil {
		npmMissing = fmt.Sprintf("%s is missing: run `npm ci` in %s", everythingJS, repoRoot)
	} else if nodeBin, err = exec.LookPath("node"); err != nil {
		npmMissing = "node is not installed"
	}
	return dir, nil
}

// requireNPM skips the test when the npm servers are not installed, except
// in CI, where they must be.
func requireNPM(t *testing.T) {
	t.Helper()
	if npmMissing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("npm test servers unavailable in CI: %s", npmMissing)
	}
	t.Skipf("npm test servers unavailable: %s", npmMissing)
}

// peer describes one real server and what it offers.
type peer struct {
	name       string
	protocol   string
	wantEra    session.Era
	serverName string
	npm        bool
	// command returns argv and env (nil env means mcpd's) for the child.
	command func(t *testing.T) (string, []string, []string)
	// recvLog: the child writes "recv <method>" lines to stderr.
	recvLog bool

	// echo: tool call answered with text; args(msg) and want(msg).
	echoTool string
	echoArgs func(msg string) string
	echoWant func(msg string) string
	// setup runs once after the handshake (e.g. to seed data for echo).
	setup func(t *testing.T, c *child)

	// progress: a tool call that sends steps progress notifications.
	progressTool  string
	progressArgs  string
	progressSteps int

	resourceURI  string
	resourceText string // substring of the first content's text

	promptName string
	promptArgs string
	promptText string // substring of the first message's text

	// sleepTool with sleepArgs(id) runs until cancelled; the child logs
	// "sleep started <id>" and "sleep cancelled <id>" when recvLog is set.
	sleepTool string
	sleepArgs func(id int) string

	gosdkExtras bool // askname, count, add_tool, touch
	// stopBySIGTERM: the child does not exit on stdin EOF when the stop
	// test runs, so the stop sequence must escalate to SIGTERM.
	stopBySIGTERM bool
	// subscribeURI/touch: legacy resources/subscribe then a call that
	// updates it.
	subscribeURI string
	touchTool    string
	touchArgs    string
}

func gosdkPeer(protocol string, era session.Era) peer {
	return peer{
		name: "gosdk/" + protocol, protocol: protocol, wantEra: era, serverName: "mcpd-test-gosdk",
		command:      func(*testing.T) (string, []string, []string) { return gosdkBin, nil, nil },
		recvLog:      true,
		echoTool:     "echo",
		echoArgs:     func(m string) string { return fmt.Sprintf(`{"message":%q}`, m) },
		echoWant:     func(m string) string { return m },
		progressTool: "progress", progressArgs: `{"steps":3}`, progressSteps: 3,
		resourceURI: "test://b", resourceText: "hello b",
		promptName: "greet", promptArgs: `{"name":"Bob"}`, promptText: "Hello, Bob!",
		sleepTool: "sleep", sleepArgs: func(id int) string { return fmt.Sprintf(`{"ms":%d}`, id) },
		gosdkExtras:  true,
		subscribeURI: "test://a", touchTool: "touch", touchArgs: `{"uri":"test://a"}`,
	}
}

func mcpgoPeer(protocol string, era session.Era) peer {
	return peer{
		name: "mcpgo/" + protocol, protocol: protocol, wantEra: era, serverName: "mcpd-test-mcpgo",
		command:      func(*testing.T) (string, []string, []string) { return mcpgoBin, nil, nil },
		recvLog:      true,
		echoTool:     "echo",
		echoArgs:     func(m string) string { return fmt.Sprintf(`{"message":%q}`, m) },
		echoWant:     func(m string) string { return m },
		progressTool: "progress", progressArgs: `{"steps":3}`, progressSteps: 3,
		resourceURI: "test://a", resourceText: "hello a",
		promptName: "greet", promptArgs: `{"name":"Bob"}`, promptText: "Hello, Bob!",
		sleepTool: "sleep", sleepArgs: func(id int) string { return fmt.Sprintf(`{"ms":%d}`, id) },
	}
}

func peers() []peer {
	everything := peer{
		name: "server-everything/auto", protocol: session.ProtocolAuto, wantEra: session.EraLegacy,
		serverName: "mcp-servers/everything", npm: true,
		command: func(*testing.T) (string, []string, []string) {
			return nodeBin, []string{filepath.Join(repoRoot, everythingJS), "stdio"}, nil
		},
		echoTool: "echo",
		echoArgs: func(m string) string { return fmt.Sprintf(`{"message":%q}`, m) },
		echoWant: func(m string) string { return "Echo: " + m },
		// 2 steps of 50 ms each.
		progressTool: "trigger-long-running-operation", progressArgs: `{"duration":0.1,"steps":2}`, progressSteps: 2,
		resourceURI: "demo://resource/dynamic/text/1", resourceText: "Resource 1:",
		promptName: "simple-prompt", promptArgs: `{}`, promptText: "simple prompt",
		// A progress notification every 50 ms for 10 minutes: the first one
		// proves the child is running the request.
		sleepTool: "trigger-long-running-operation",
		sleepArgs: func(int) string { return `{"duration":600,"steps":12000}` },
		// server-everything ignores the cancellation: the cancelled
		// operation's timers keep node alive after stdin EOF, so Stop must
		// escalate ("If it does not exit within a reasonable time, terminate
		// it ... SIGTERM").
		stopBySIGTERM: true,
	}
	memory := memoryPeer(session.ProtocolLegacy)
	memoryAuto := memoryPeer(session.ProtocolAuto)
	return []peer{
		gosdkPeer(session.ProtocolAuto, session.EraModern),
		gosdkPeer(session.ProtocolModern, session.EraModern),
		gosdkPeer(session.ProtocolLegacy, session.EraLegacy),
		mcpgoPeer(session.ProtocolAuto, session.EraModern),
		mcpgoPeer(session.ProtocolModern, session.EraModern),
		mcpgoPeer(session.ProtocolLegacy, session.EraLegacy),
		everything,
		memory,
		memoryAuto,
	}
}

// memoryPeer is server-memory, a legacy-only TypeScript server.
func memoryPeer(protocol string) peer {
	return peer{
		name: "server-memory/" + protocol, protocol: protocol, wantEra: session.EraLegacy,
		serverName: "memory-server", npm: true,
		command: func(t *testing.T) (string, []string, []string) {
			env := append(os.Environ(), "MEMORY_FILE_PATH="+filepath.Join(t.TempDir(), "memory.jsonl"))
			return nodeBin, []string{filepath.Join(repoRoot, memoryJS)}, env
		},
		// "echo" on the memory server: open_nodes of an entity seeded by setup.
		echoTool: "open_nodes",
		echoArgs: func(m string) string { return fmt.Sprintf(`{"names":[%q]}`, m) },
		echoWant: func(m string) string { return fmt.Sprintf(`"name": %q`, m) },
		setup: func(t *testing.T, c *child) {
			var ents []string
			for i := range 50 {
				ents = append(ents, fmt.Sprintf(`{"name":"m%d","entityType":"thing","observations":["o%d"]}`, i, i))
			}
			ents = append(ents, `{"name":"hello","entityType":"thing","observations":["x"]}`)
			callTool(t, c, "create_entities", `{"entities":[`+strings.Join(ents, ",")+`]}`)
		},
		resourceURI: "memory://knowledge-graph", resourceText: `"m49"`,
		subscribeURI: "memory://knowledge-graph", touchTool: "add_observations",
		touchArgs: `{"observations":[{"entityName":"m1","contents":["touched"]}]}`,
	}
}

// child is one running peer driven through mcpd's transport and session.
type child struct {
	proc  *transport.Process
	sess  *session.Session
	ring  *transport.Ring
	info  session.Info
	notes *notes

	mu       sync.Mutex // guards elicited
	elicited []string   // methods of the child's requests that were answered

	stopOnce sync.Once
	stopErr  error
}

// notes records the session's unrouted notifications.
type notes struct {
	mu   sync.Mutex // guards list
	list []session.Notification
}

func (n *notes) add(x session.Notification) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.list = append(n.list, x)
}

func (n *notes) find(method, contains string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range n.list {
		if x.Method == method && bytes.Contains(x.Params, []byte(contains)) {
			return true
		}
	}
	return false
}

// stop runs the transport's stop sequence and waits for the session's reader.
func (c *child) stop() error {
	c.stopOnce.Do(func() {
		c.stopErr = c.proc.Stop()
		c.sess.Wait()
	})
	return c.stopErr
}

func startPeer(t *testing.T, p peer) *child {
	t.Helper()
	log := zaptest.NewLogger(t)
	command, args, env := p.command(t)
	ring := transport.NewRing(0, 0)
	proc, err := transport.Start(transport.Options{
		Name: p.name, Command: command, Args: args, Env: env,
		Stderr: ring, Logger: log, ShutdownGrace: 2 * time.Second,
	})
	if err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	c := &child{proc: proc, ring: ring, notes: &notes{}}
	pid := proc.Pid()
	t.Cleanup(func() {
		if err := c.stop(); err != nil {
			t.Logf("stop %s: %v", p.name, err)
		}
		// Every process a test starts must be dead when it ends.
		if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process group %d still exists after Stop (kill 0: %v)", pid, err)
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
	c.sess = session.New(proc, session.Options{
		Server:     p.name,
		Protocol:   p.protocol,
		ClientInfo: json.RawMessage(`{"name":"mcpd-compat-test","version":"0.0.0"}`),
		// mcpd declares form elicitation so the go-sdk legacy askname
		// arrives as an elicitation/create request.
		Capabilities:   json.RawMessage(`{"elicitation":{"form":{}}}`),
		OnNotification: c.notes.add,
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			c.mu.Lock()
			c.elicited = append(c.elicited, method)
			c.mu.Unlock()
			if method == "elicitation/create" {
				return json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`), nil
			}
			return nil, &session.RPCError{Code: -32601, Message: "method not found"}
		},
		Logger: log,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	info, err := c.sess.Handshake(ctx)
	if err != nil {
		t.Fatalf("handshake %s: %v\nstderr:\n%s", p.name, err, stderrText(ring))
	}
	c.info = info
	return c
}

func stderrText(r *transport.Ring) string {
	var b strings.Builder
	for _, l := range r.Last(200) {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// waitFor polls cond until it holds or a generous deadline passes. It exists
// for asynchronous effects (stderr lines, notifications) that have no
// completion signal of their own; it never decides a timing outcome.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// stderrIndex returns the index of the first stderr line equal to text at
// or after from, or -1.
func stderrIndex(r *transport.Ring, text string, from int) int {
	lines := r.Last(1 << 20)
	for i := from; i < len(lines); i++ {
		if lines[i].Text == text {
			return i
		}
	}
	return -1
}

func call(t *testing.T, c *child, req *session.Request) json.RawMessage {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.sess.Call(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", req.Method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: child answered error %d %q %s", req.Method, resp.Error.Code, resp.Error.Message, resp.Error.Data)
	}
	if resp.Result == nil {
		t.Fatalf("%s: response has no result", req.Method)
	}
	return resp.Result
}

func callTool(t *testing.T, c *child, name, args string) json.RawMessage {
	t.Helper()
	return call(t, c, &session.Request{
		Method: "tools/call",
		Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)),
	})
}

// toolResult is the subset of a CallToolResult the tests read.
type toolResult struct {
	ResultType string `json:"resultType"`
	IsError    bool   `json:"isError"`
	Content    []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	InputRequests map[string]struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	} `json:"inputRequests"`
	RequestState string `json:"requestState"`
}

func decode[T any](t *testing.T, raw json.RawMessage) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %s: %v", raw, err)
	}
	return v
}

func firstText(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	r := decode[toolResult](t, raw)
	if r.IsError {
		t.Fatalf("tool result is an error: %s", raw)
	}
	if len(r.Content) == 0 {
		t.Fatalf("tool result has no content: %s", raw)
	}
	return r.Content[0].Text
}

func toolNames(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	r := decode[struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}](t, raw)
	var names []string
	for _, x := range r.Tools {
		names = append(names, x.Name)
	}
	return names
}

func TestPeers(t *testing.T) {
	for _, p := range peers() {
		t.Run(p.name, func(t *testing.T) {
			if p.npm {
				requireNPM(t)
			}
			c := startPeer(t, p)
			if p.setup != nil {
				p.setup(t, c)
			}
			t.Run("handshake", func(t *testing.T) { testHandshake(t, p, c) })
			t.Run("tools/list", func(t *testing.T) {
				names := toolNames(t, call(t, c, &session.Request{Method: "tools/list"}))
				if !contains(names, p.echoTool) {
					t.Errorf("tools/list = %v, want it to include %q", names, p.echoTool)
				}
			})
			t.Run("tools/call", func(t *testing.T) {
				got := firstText(t, callTool(t, c, p.echoTool, p.echoArgs("hello")))
				if !strings.Contains(got, p.echoWant("hello")) {
					t.Errorf("%s text = %q, want it to contain %q", p.echoTool, got, p.echoWant("hello"))
				}
			})
			if p.progressTool != "" {
				t.Run("progress/string-token", func(t *testing.T) { testProgress(t, p, c, `"app-token-1"`) })
				t.Run("progress/number-token", func(t *testing.T) { testProgress(t, p, c, `7`) })
			}
			if p.resourceURI != "" {
				t.Run("resources/read", func(t *testing.T) {
					raw := call(t, c, &session.Request{Method: "resources/read", Params: json.RawMessage(fmt.Sprintf(`{"uri":%q}`, p.resourceURI))})
					r := decode[struct {
						Contents []struct {
							URI  string `json:"uri"`
							Text string `json:"text"`
						} `json:"contents"`
					}](t, raw)
					if len(r.Contents) == 0 || !strings.Contains(r.Contents[0].Text, p.resourceText) {
						t.Errorf("resources/read %s = %s, want text containing %q", p.resourceURI, raw, p.resourceText)
					}
				})
			}
			if p.promptName != "" {
				t.Run("prompts/get", func(t *testing.T) {
					raw := call(t, c, &session.Request{Method: "prompts/get", Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s}`, p.promptName, p.promptArgs))})
					r := decode[struct {
						Messages []struct {
							Role    string `json:"role"`
							Content struct {
								Text string `json:"text"`
							} `json:"content"`
						} `json:"messages"`
					}](t, raw)
					if len(r.Messages) == 0 || !strings.Contains(r.Messages[0].Content.Text, p.promptText) {
						t.Errorf("prompts/get %s = %s, want text containing %q", p.promptName, raw, p.promptText)
					}
				})
			}
			if p.sleepTool != "" {
				t.Run("cancel", func(t *testing.T) { testCancel(t, p, c) })
			}
			if p.gosdkExtras {
				t.Run("askname", func(t *testing.T) { testAskName(t, p, c) })
				t.Run("count", func(t *testing.T) { testCount(t, c) })
				t.Run("add_tool", func(t *testing.T) { testAddTool(t, p, c) })
			}
			if p.subscribeURI != "" && p.wantEra == session.EraLegacy {
				t.Run("resources/subscribe", func(t *testing.T) { testSubscribe(t, p, c) })
			}
			t.Run("concurrent", func(t *testing.T) { testConcurrent(t, p, c) })
			t.Run("stop", func(t *testing.T) { testStop(t, p, c) })
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func testHandshake(t *testing.T, p peer, c *child) {
	info := c.info
	if info.Era != p.wantEra {
		t.Errorf("era = %q, want %q", info.Era, p.wantEra)
	}
	wantVersion := jsonrpc.LegacyVersion
	if p.wantEra == session.EraModern {
		wantVersion = jsonrpc.ModernVersion
		if !contains(info.SupportedVersions, jsonrpc.ModernVersion) {
			t.Errorf("supported versions = %v, want %s among them", info.SupportedVersions, jsonrpc.ModernVersion)
		}
	}
	if info.ProtocolVersion != wantVersion {
		t.Errorf("protocol version = %q, want %q", info.ProtocolVersion, wantVersion)
	}
	si := decode[struct {
		Name string `json:"name"`
	}](t, info.ServerInfo)
	if si.Name != p.serverName {
		t.Errorf("serverInfo = %s, want name %q", info.ServerInfo, p.serverName)
	}
	caps := decode[map[string]json.RawMessage](t, info.Capabilities)
	if _, ok := caps["tools"]; !ok {
		t.Errorf("capabilities = %s, want tools", info.Capabilities)
	}
	if p.recvLog {
		// The child saw exactly the negotiation the era calls for. Its
		// stderr is drained concurrently with stdout, so wait for the line
		// that must come; the child logs requests in the order it reads
		// them, so once that line is there an earlier one would be too.
		seen := func(line string) bool { return stderrIndex(c.ring, line, 0) >= 0 }
		if p.protocol != session.ProtocolLegacy {
			waitFor(t, "recv server/discover", func() bool { return seen("recv server/discover") })
		}
		if p.wantEra == session.EraLegacy {
			waitFor(t, "recv notifications/initialized", func() bool { return seen("recv notifications/initialized") })
			if p.protocol == session.ProtocolLegacy && seen("recv server/discover") {
				t.Errorf("protocol legacy sent server/discover; stderr:\n%s", stderrText(c.ring))
			}
			if !seen("recv initialize") {
				t.Errorf("legacy child did not receive initialize; stderr:\n%s", stderrText(c.ring))
			}
		} else if seen("recv initialize") {
			t.Errorf("modern child received initialize; stderr:\n%s", stderrText(c.ring))
		}
	}
}

// testProgress checks that notifications/progress reaches OnProgress with the
// app's own token restored, in order, before the call returns.
func testProgress(t *testing.T, p peer, c *child, token string) {
	var mu sync.Mutex
	var got []json.RawMessage
	args := p.progressArgs
	raw := call(t, c, &session.Request{
		Method: "tools/call",
		Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s,"_meta":{"progressToken":%s}}`, p.progressTool, args, token)),
		OnProgress: func(params json.RawMessage) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, append(json.RawMessage(nil), params...))
		},
	})
	firstText(t, raw)
	mu.Lock()
	defer mu.Unlock()
	if len(got) != p.progressSteps {
		t.Fatalf("got %d progress notifications, want %d: %s", len(got), p.progressSteps, got)
	}
	last := 0.0
	for _, params := range got {
		n := decode[struct {
			ProgressToken json.RawMessage `json:"progressToken"`
			Progress      float64         `json:"progress"`
		}](t, params)
		if string(n.ProgressToken) != token {
			t.Errorf("progress token = %s, want the app's %s", n.ProgressToken, token)
		}
		if n.Progress <= last {
			t.Errorf("progress %v after %v: not increasing", n.Progress, last)
		}
		last = n.Progress
	}
}

// sleepIDs makes each cancelled call recognisable in the child's stderr.
var (
	sleepMu sync.Mutex
	sleepID = 600000
)

func nextSleepID() int {
	sleepMu.Lock()
	defer sleepMu.Unlock()
	sleepID++
	return sleepID
}

// testCancel cancels a running call and checks that the call returns at once
// with the context's error, that the child saw notifications/cancelled, and
// that the session still works.
func testCancel(t *testing.T, p peer, c *child) {
	id := nextSleepID()
	started := make(chan struct{})
	var once sync.Once
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		resp *session.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.sess.Call(ctx, &session.Request{
			Method:     "tools/call",
			Params:     json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s,"_meta":{"progressToken":"sleep-%d"}}`, p.sleepTool, p.sleepArgs(id), id)),
			OnProgress: func(json.RawMessage) { once.Do(func() { close(started) }) },
		})
		done <- result{resp, err}
	}()
	startedLine := fmt.Sprintf("sleep started %d", id)
	if p.recvLog {
		waitFor(t, startedLine, func() bool { return stderrIndex(c.ring, startedLine, 0) >= 0 })
	} else {
		// The first progress notification proves the child runs the request.
		select {
		case <-started:
		case r := <-done:
			t.Fatalf("%s returned before it was cancelled: %+v %v", p.sleepTool, r.resp, r.err)
		}
	}
	cancel()
	r := <-done
	if !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled call returned (%+v, %v), want context.Canceled", r.resp, r.err)
	}
	if p.recvLog {
		from := stderrIndex(c.ring, startedLine, 0)
		waitFor(t, "recv notifications/cancelled", func() bool {
			return stderrIndex(c.ring, "recv notifications/cancelled", from) >= 0
		})
		waitFor(t, "the child to stop sleeping", func() bool {
			return stderrIndex(c.ring, fmt.Sprintf("sleep cancelled %d", id), from) >= 0
		})
	}
	// The session is still usable.
	if got := firstText(t, callTool(t, c, p.echoTool, p.echoArgs("hello"))); !strings.Contains(got, p.echoWant("hello")) {
		t.Errorf("echo after cancel = %q", got)
	}
}

// testAskName drives the go-sdk's elicitation: modern passes the
// input_required result through and retries with inputResponses; legacy
// answers the child's elicitation/create request.
func testAskName(t *testing.T, p peer, c *child) {
	caps := json.RawMessage(`{"elicitation":{"form":{}}}`)
	raw := call(t, c, &session.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"askname","arguments":{}}`), ClientCapabilities: caps})
	if p.wantEra == session.EraLegacy {
		if got := firstText(t, raw); got != "hello Ada" {
			t.Errorf("askname = %q, want %q", got, "hello Ada")
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if !contains(c.elicited, "elicitation/create") {
			t.Errorf("child requests answered = %v, want elicitation/create", c.elicited)
		}
		return
	}
	// "the server returns an InputRequiredResult ... the client retries the
	// original request with inputResponses and the requestState".
	r := decode[toolResult](t, raw)
	if r.ResultType != "input_required" {
		t.Fatalf("askname resultType = %q, want input_required: %s", r.ResultType, raw)
	}
	who, ok := r.InputRequests["who"]
	if !ok || who.Method != "elicitation/create" {
		t.Fatalf("askname inputRequests = %s, want who: elicitation/create", raw)
	}
	raw = call(t, c, &session.Request{
		Method: "tools/call",
		Params: json.RawMessage(fmt.Sprintf(`{"name":"askname","arguments":{},"inputResponses":{"who":{"action":"accept","content":{"name":"Ada"}}},"requestState":%q}`,
			r.RequestState)),
		ClientCapabilities: caps,
	})
	if got := firstText(t, raw); got != "hello Ada" {
		t.Errorf("askname retry = %q, want %q", got, "hello Ada")
	}
}

// testCount checks the count tool, which reports the tools/list requests the
// child served, so later cache tests can rely on it.
func testCount(t *testing.T, c *child) {
	count := func() int {
		var n int
		if _, err := fmt.Sscan(firstText(t, callTool(t, c, "count", `{}`)), &n); err != nil {
			t.Fatalf("count: %v", err)
		}
		return n
	}
	before := count()
	for range 3 {
		call(t, c, &session.Request{Method: "tools/list"})
	}
	if after := count(); after != before+3 {
		t.Errorf("count after 3 tools/list = %d, want %d", after, before+3)
	}
}

func testAddTool(t *testing.T, p peer, c *child) {
	name := "added_" + strings.ReplaceAll(p.protocol, "/", "_")
	callTool(t, c, "add_tool", fmt.Sprintf(`{"name":%q}`, name))
	if p.wantEra == session.EraLegacy {
		// Legacy: "the server sends notifications/tools/list_changed" on its own.
		waitFor(t, "notifications/tools/list_changed", func() bool {
			return c.notes.find("notifications/tools/list_changed", "")
		})
	}
	if names := toolNames(t, call(t, c, &session.Request{Method: "tools/list"})); !contains(names, name) {
		t.Errorf("tools/list after add_tool = %v, want %q", names, name)
	}
	if got := firstText(t, callTool(t, c, name, `{}`)); got != name {
		t.Errorf("%s = %q", name, got)
	}
}

// testSubscribe checks legacy resources/subscribe and the updated
// notification that follows a change.
func testSubscribe(t *testing.T, p peer, c *child) {
	call(t, c, &session.Request{Method: "resources/subscribe", Params: json.RawMessage(fmt.Sprintf(`{"uri":%q}`, p.subscribeURI))})
	callTool(t, c, p.touchTool, p.touchArgs)
	waitFor(t, "notifications/resources/updated for "+p.subscribeURI, func() bool {
		return c.notes.find("notifications/resources/updated", p.subscribeURI)
	})
}

// testConcurrent sends 50 calls at once; each must get its own answer.
func testConcurrent(t *testing.T, p peer, c *child) {
	const n = 50
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			msg := fmt.Sprintf("m%d", i)
			resp, err := c.sess.Call(ctx, &session.Request{
				Method: "tools/call",
				Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s}`, p.echoTool, p.echoArgs(msg))),
			})
			switch {
			case err != nil:
				errs <- fmt.Errorf("call %d: %w", i, err)
			case resp.Error != nil:
				errs <- fmt.Errorf("call %d: %v", i, resp.Error)
			default:
				var r toolResult
				if err := json.Unmarshal(resp.Result, &r); err != nil || len(r.Content) == 0 {
					errs <- fmt.Errorf("call %d: bad result %s", i, resp.Result)
					return
				}
				// m1 must not match m10..m19: echo answers are compared
				// whole; the memory server's JSON holds the quoted name.
				got, want := r.Content[0].Text, p.echoWant(msg)
				ok := got == want
				if p.echoTool != "echo" {
					ok = strings.Contains(got, want)
				}
				if !ok {
					errs <- fmt.Errorf("call %d: got %q, want %q", i, got, want)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// testStop checks the stop sequence: the child exits on stdin EOF, the
// session's reader ends, later calls fail with ErrClosed, nothing is left.
func testStop(t *testing.T, p peer, c *child) {
	pid := c.proc.Pid()
	if err := c.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	select {
	case <-c.proc.Done():
	default:
		t.Fatal("Done not closed after Stop returned")
	}
	select {
	case <-c.sess.Done():
	default:
		t.Fatal("session Done not closed after the child was reaped")
	}
	exitErr := c.proc.ExitError()
	if p.stopBySIGTERM {
		var ee *exec.ExitError
		if !errors.As(exitErr, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
			t.Errorf("child exit = %v, want it terminated by SIGTERM after the grace period", exitErr)
		}
	} else if exitErr != nil {
		t.Errorf("child exit after stdin EOF = %v, want a clean exit; stderr:\n%s", exitErr, stderrText(c.ring))
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("pid %d still exists after Stop (kill 0: %v)", pid, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.sess.Call(ctx, &session.Request{Method: "tools/list"})
	if !errors.Is(err, session.ErrClosed) {
		t.Errorf("call after stop = %v, want ErrClosed", err)
	}
}
