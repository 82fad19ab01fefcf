package supervisor

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/sandbox"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// envPager selects the test binary's own paging fake (see runPager).
const envPager = "MCPD_SUP_PAGER"

func TestMain(m *testing.M) {
	sandbox.RunIfHelper() // the helper of sandboxed children (sandbox_test.go)
	if mode := os.Getenv(envPager); mode != "" {
		os.Exit(runPager(mode))
	}
	fakemcp.Main()
	goleak.VerifyTestMain(m)
}

// noRaceExitSleep stops a -race child from sleeping 1s in os.Exit
// (the race runtime's atexit_sleep_ms), which would slow every stop.
const noRaceExitSleep = "atexit_sleep_ms=0"

// fakeSpec is a server running fakemcp in mode.
func fakeSpec(name, mode string) Spec {
	cmd, args := fakemcp.Command()
	return Spec{Name: name, Command: cmd, Args: args, Env: map[string]string{fakemcp.EnvMode: mode, "GORACE": noRaceExitSleep}}
}

// harness runs a Supervisor for one test and records its events.
type harness struct {
	t      *testing.T
	s      *Supervisor
	cancel context.CancelFunc
	done   chan error

	mu     sync.Mutex
	events []Event
}

// newHarness builds a supervisor; configure may adjust it (clock) before Run.
func newHarness(t *testing.T, opts Options, configure func(*Supervisor)) *harness {
	t.Helper()
	h := &harness{t: t, done: make(chan error, 1)}
	if opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(t)
	}
	opts.OnEvent = func(ev Event) {
		h.mu.Lock()
		h.events = append(h.events, ev)
		h.mu.Unlock()
	}
	h.s = New(opts)
	if configure != nil {
		configure(h.s)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- h.s.Run(ctx) }()
	t.Cleanup(h.stop)
	return h
}

// subscribe opens a stream of app on the supervisor's subscription manager;
// it is closed when the test ends.
func (h *harness) subscribe(app string, w subscriptions.Watch) *subscriptions.Stream {
	h.t.Helper()
	stream, _, err := h.s.Subscriptions().Subscribe(h.t.Context(), subscriptions.AppInfo{Name: app}, w)
	if err != nil {
		h.t.Fatalf("Subscribe: %v", err)
	}
	h.t.Cleanup(stream.Close)
	return stream
}

// tookEvent takes what stream has queued, if anything, and reports whether
// an event matching want was among it (for waitFor).
func tookEvent(stream *subscriptions.Stream, want func(*subscriptions.Event) bool) bool {
	select {
	case <-stream.Ready():
	default:
		return false
	}
	evs, _ := stream.Take(nil)
	return slices.ContainsFunc(evs, want)
}

// stop ends Run and waits for it (idempotent).
func (h *harness) stop() {
	h.cancel()
	if err, ok := <-h.done; ok {
		close(h.done)
		if err != nil {
			h.t.Errorf("Run: %v", err)
		}
	}
}

func (h *harness) count(server string, kind EventKind) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, ev := range h.events {
		if ev.Server == server && ev.Kind == kind {
			n++
		}
	}
	return n
}

func (h *harness) kinds(server string) []EventKind {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []EventKind
	for _, ev := range h.events {
		if ev.Server == server {
			out = append(out, ev.Kind)
		}
	}
	return out
}

func (h *harness) status(name string) Status {
	h.t.Helper()
	st, err := h.s.ServerStatus(name)
	if err != nil {
		h.t.Fatalf("ServerStatus(%q): %v", name, err)
	}
	return st
}

// waitState polls until the server is in state want.
func (h *harness) waitState(name string, want State) Status {
	h.t.Helper()
	var st Status
	waitFor(h.t, fmt.Sprintf("server %q in state %s", name, want), func() bool {
		st = h.status(name)
		return st.State == want
	})
	return st
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func toolCall(name string, args any) *session.Request {
	p, _ := json.Marshal(map[string]any{"name": name, "arguments": args})
	return &session.Request{Method: "tools/call", Params: p}
}

// text returns the first text content of a tools/call result.
func text(t *testing.T, resp *session.Response) string {
	t.Helper()
	if resp.Error != nil {
		t.Fatalf("mcp error: %v", resp.Error)
	}
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("bad result %s: %v", resp.Result, err)
	}
	return r.Content[0].Text
}

func (h *harness) echo(server, msg string) (string, error) {
	h.t.Helper()
	resp, err := h.s.Call(context.Background(), server, toolCall("echo", map[string]any{"message": msg}), CallOptions{})
	if err != nil {
		return "", err
	}
	return text(h.t, resp), nil
}

func (h *harness) mustEcho(server, msg string) {
	h.t.Helper()
	got, err := h.echo(server, msg)
	if err != nil {
		h.t.Fatalf("echo on %q: %v", server, err)
	}
	if got != msg {
		h.t.Fatalf("echo on %q = %q, want %q", server, got, msg)
	}
}

// pidGone reports whether no process (not even a zombie) has that pid.
func pidGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// runPager is a minimal legacy MCP server whose tools/list is paged as mode
// says:
//
//	pages    [a b] "" → [c] "p3" → [d] end (an empty cursor is not the end)
//	cycle    [a] "x" → [b] "x" → ...
//	invalid  [a] "stale"; "stale" → -32602 once; then [a] "good" → [b] end
//	runaway  every page returns a new cursor
//	error    tools/list → -32603
func runPager(mode string) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	staleSeen := false
	page := 0
	for in.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Cursor *string `json:"cursor"`
			} `json:"params"`
		}
		if json.Unmarshal(in.Bytes(), &msg) != nil || msg.ID == nil {
			continue
		}
		fmt.Fprintf(os.Stderr, "pager: %s\n", msg.Method)
		res := map[string]any{}
		var rerr map[string]any
		tools := func(names ...string) []any {
			var l []any
			for _, n := range names {
				l = append(l, map[string]any{"name": n, "inputSchema": map[string]any{"type": "object"}})
			}
			return l
		}
		cursor := "<none>"
		if msg.Params.Cursor != nil {
			cursor = *msg.Params.Cursor
		}
		switch msg.Method {
		case "initialize":
			res = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{"tools": map[string]any{}},
				"serverInfo": map[string]any{"name": "pager", "version": "1"}}
		case "tools/list":
			switch mode + " " + cursor {
			case "pages <none>":
				res = map[string]any{"tools": tools("a", "b"), "nextCursor": ""}
			case "pages ":
				res = map[string]any{"tools": tools("c"), "nextCursor": "p3"}
			case "pages p3":
				res = map[string]any{"tools": tools("d")}
			case "cycle <none>":
				res = map[string]any{"tools": tools("a"), "nextCursor": "x"}
			case "cycle x":
				res = map[string]any{"tools": tools("b"), "nextCursor": "x"}
			case "invalid <none>":
				next := "stale"
				if staleSeen {
					next = "good"
				}
				res = map[string]any{"tools": tools("a"), "nextCursor": next}
			case "invalid stale":
				staleSeen = true
				rerr = map[string]any{"code": -32602, "message": "invalid cursor"}
			case "invalid good":
				res = map[string]any{"tools": tools("b")}
			case "error <none>":
				rerr = map[string]any{"code": -32603, "message": "boom"}
			default:
				if mode == "runaway" {
					page++
					res = map[string]any{"tools": []any{}, "nextCursor": fmt.Sprint("c", page)}
				} else {
					rerr = map[string]any{"code": -32602, "message": "unexpected cursor " + cursor}
				}
			}
		default:
			rerr = map[string]any{"code": -32601, "message": "method not found"}
		}
		m := map[string]any{"jsonrpc": "2.0", "id": msg.ID}
		if rerr != nil {
			m["error"] = rerr
		} else {
			m["result"] = res
		}
		if err := out.Encode(m); err != nil {
			return 1
		}
	}
	return 0
}

func pagerSpec(name, mode string) Spec {
	cmd, args := fakemcp.Command()
	return Spec{Name: name, Command: cmd, Args: args, Env: map[string]string{envPager: mode, "GORACE": noRaceExitSleep}, Protocol: session.ProtocolLegacy}
}

// fakeClock drives backoff and cooldown timers by hand.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	d       time.Duration
	c       chan time.Time
	stopped bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) install(s *Supervisor) {
	s.now = c.Now
	s.after = c.After
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) (<-chan time.Time, func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ft := &fakeTimer{d: d, c: make(chan time.Time, 1)}
	c.timers = append(c.timers, ft)
	return ft.c, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !ft.stopped
		ft.stopped = true
		return was
	}
}

// fireNext waits for a pending timer, advances the clock by its duration,
// fires it and returns the duration.
func (c *fakeClock) fireNext(t *testing.T) time.Duration { return c.fire(t, true) }

// fire waits for a pending timer, takes it, advances the clock by its
// duration if advance is set, fires it and returns the duration.
func (c *fakeClock) fire(t *testing.T, advance bool) time.Duration {
	t.Helper()
	var ft *fakeTimer
	waitFor(t, "a pending timer", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		for i, x := range c.timers {
			if !x.stopped {
				ft = x
				c.timers = append(c.timers[:i:i], c.timers[i+1:]...)
				return true
			}
		}
		return false
	})
	c.mu.Lock()
	if advance {
		c.now = c.now.Add(ft.d)
	}
	ft.stopped = true
	now := c.now
	c.mu.Unlock()
	ft.c <- now
	return ft.d
}

func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, x := range c.timers {
		if !x.stopped {
			n++
		}
	}
	return n
}
