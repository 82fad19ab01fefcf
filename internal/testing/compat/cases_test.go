package compat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
)

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

// sleepMu guards sleepID, which makes each cancelled call recognisable in
// the child's stderr.
var sleepMu sync.Mutex

var sleepID = 600000

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
