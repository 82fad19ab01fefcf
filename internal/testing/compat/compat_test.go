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
