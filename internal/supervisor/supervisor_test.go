package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/session"
)

func TestLazyStartOnFirstCall(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("lazy", "modern")}}, nil)

	st := h.status("lazy")
	if st.State != StateStopped || st.Pid != 0 {
		t.Fatalf("before the first call: state %s pid %d, want stopped 0", st.State, st.Pid)
	}
	h.mustEcho("lazy", "hello")
	st = h.status("lazy")
	if st.State != StateReady || st.Pid == 0 || st.Era != session.EraModern || st.StartedAt.IsZero() {
		t.Fatalf("after the call: %+v", st)
	}
	if st.CallsTotal != 1 || st.CallsFailed != 0 || st.CallsInFlight != 0 || st.Restarts != 0 {
		t.Fatalf("counters: total %d failed %d inflight %d restarts %d", st.CallsTotal, st.CallsFailed, st.CallsInFlight, st.Restarts)
	}
	if !strings.Contains(st.Command, "-test.run=^$") || st.LastStderrLine == "" {
		t.Fatalf("command %q, last stderr line %q", st.Command, st.LastStderrLine)
	}
	if want := []EventKind{EventStarted, EventReady}; !cmp.Equal(h.kinds("lazy"), want) {
		t.Fatalf("events %v, want %v", h.kinds("lazy"), want)
	}
	// An MCP error counts as a failed call and is returned in the response.
	resp, err := h.s.Call(context.Background(), "lazy", toolCall("nope", nil), CallOptions{})
	if err != nil || resp.Error == nil || resp.Error.Code != -32602 {
		t.Fatalf("unknown tool: resp %+v err %v", resp, err)
	}
	if st := h.status("lazy"); st.CallsTotal != 2 || st.CallsFailed != 1 {
		t.Fatalf("counters after an MCP error: total %d failed %d", st.CallsTotal, st.CallsFailed)
	}
}

func TestAutostart(t *testing.T) {
	spec := fakeSpec("auto", "legacy")
	spec.Autostart = true
	h := newHarness(t, Options{Specs: []Spec{spec, fakeSpec("lazy", "modern")}}, nil)
	st := h.waitState("auto", StateReady)
	if st.Era != session.EraLegacy || st.Pid == 0 || !st.Autostart {
		t.Fatalf("autostarted: %+v", st)
	}
	if st := h.status("lazy"); st.State != StateStopped {
		t.Fatalf("lazy server state %s, want stopped", st.State)
	}
	h.mustEcho("auto", "x")
}

func TestConcurrentFirstCallsShareOneStart(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("s", "dual")}}, nil)
	const n = 50
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			msg := strings.Repeat("x", i)
			got, err := h.echo("s", msg)
			if err == nil && got != msg {
				err = errors.New("wrong echo " + got)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := h.count("s", EventStarted); got != 1 {
		t.Fatalf("%d children started, want 1", got)
	}
	if st := h.status("s"); st.CallsTotal != n || st.CallsFailed != 0 {
		t.Fatalf("total %d failed %d", st.CallsTotal, st.CallsFailed)
	}
}

func TestKilledChildRestartsOnNextCall(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("k", "modern")}, BackoffMin: time.Millisecond}, nil)
	h.mustEcho("k", "before")
	pid1 := h.status("k").Pid

	// A call in flight when the child dies fails at once, naming the server.
	inflight := make(chan error, 1)
	go func() {
		_, err := h.s.Call(context.Background(), "k", toolCall("sleep", map[string]any{"ms": 600000}), CallOptions{})
		inflight <- err
	}()
	waitFor(t, "the call in flight", func() bool { return h.status("k").CallsInFlight == 1 })
	if err := syscall.Kill(pid1, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-inflight
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `"k"`) {
		t.Fatalf("in-flight call: %v, want ErrUnavailable naming the server", err)
	}
	waitFor(t, "the exit to be noticed", func() bool { return h.count("k", EventExited) == 1 })
	waitFor(t, "pid reaped", func() bool { return pidGone(pid1) })

	h.mustEcho("k", "after")
	st := h.status("k")
	if st.State != StateReady || st.Pid == 0 || st.Pid == pid1 {
		t.Fatalf("after restart: state %s pid %d (old %d)", st.State, st.Pid, pid1)
	}
	if st.Restarts != 1 || st.LastExit != "signal: killed" || st.CallsFailed != 1 {
		t.Fatalf("restarts %d last exit %q failed %d", st.Restarts, st.LastExit, st.CallsFailed)
	}
	want := []EventKind{EventStarted, EventReady, EventExited, EventRestarting, EventStarted, EventReady}
	if got := h.kinds("k"); !cmp.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

func TestStopIsExplicit(t *testing.T) {
	spec := fakeSpec("s", "modern")
	spec.Restart = RestartAlways
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	h.mustEcho("s", "a")
	pid := h.status("s").Pid

	inflight := make(chan error, 1)
	go func() {
		_, err := h.s.Call(context.Background(), "s", toolCall("sleep", map[string]any{"ms": 600000}), CallOptions{})
		inflight <- err
	}()
	waitFor(t, "the call in flight", func() bool { return h.status("s").CallsInFlight == 1 })
	st, err := h.s.Stop(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	if st.State != StateStopped || !st.ExplicitlyStopped || st.Pid != 0 || !pidGone(pid) {
		t.Fatalf("after Stop: %+v (pid %d gone %v)", st, pid, pidGone(pid))
	}
	if err := <-inflight; !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("in-flight call: %v, want ErrUnavailable saying stopped", err)
	}
	_, err = h.echo("s", "b")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "mcpdctl start s") {
		t.Fatalf("call after Stop: %v", err)
	}
	if got := h.count("s", EventStarted); got != 1 || h.status("s").State != StateStopped {
		t.Fatalf("restarted after an explicit stop (%d starts)", got)
	}
	if st, err := h.s.Stop(context.Background(), "s"); err != nil || st.State != StateStopped {
		t.Fatalf("second Stop: %v %s", err, st.State)
	}

	st, err = h.s.Start(context.Background(), "s")
	if err != nil || st.State != StateReady || st.ExplicitlyStopped || st.Restarts != 0 {
		t.Fatalf("Start: %v %+v", err, st)
	}
	h.mustEcho("s", "c")
}

func TestRestart(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("r", "modern")}}, nil)
	// Restart of a server that never ran just starts it.
	st, err := h.s.Restart(context.Background(), "r")
	if err != nil || st.State != StateReady {
		t.Fatalf("Restart: %v %+v", err, st)
	}
	pid := st.Pid
	st, err = h.s.Restart(context.Background(), "r")
	if err != nil || st.State != StateReady || st.Pid == pid || st.Restarts != 1 {
		t.Fatalf("Restart: %v %+v (old pid %d)", err, st, pid)
	}
	if !pidGone(pid) {
		t.Fatalf("old child %d still there", pid)
	}
	h.mustEcho("r", "x")
}

func TestRunCancelReapsEveryChild(t *testing.T) {
	stubborn := fakeSpec("stubborn", "modern,ignorestdin,ignoreterm")
	stubborn.ShutdownGrace = 50 * time.Millisecond
	specs := []Spec{fakeSpec("a", "modern"), fakeSpec("b", "legacy"), stubborn}
	h := newHarness(t, Options{Specs: specs}, nil)
	var pids []int
	for _, sp := range specs {
		h.mustEcho(sp.Name, "x")
		pids = append(pids, h.status(sp.Name).Pid)
	}
	h.stop()
	for i, pid := range pids {
		if !pidGone(pid) {
			t.Errorf("%s (pid %d) still running after Run returned", specs[i].Name, pid)
		}
	}
	_, err := h.echo("a", "x")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("call after shutdown: %v", err)
	}
}

func TestCommandNotFoundFails(t *testing.T) {
	spec := Spec{Name: "nf", Command: "/nonexistent/mcpd-test-server"}
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	_, err := h.echo("nf", "x")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("call: %v", err)
	}
	st := h.status("nf")
	if st.State != StateFailed || st.LastError == "" || st.Restarts != 0 {
		t.Fatalf("status: %+v", st)
	}
	// No restarts: a second call fails fast without trying again.
	if _, err := h.echo("nf", "x"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("second call: %v", err)
	}
	if got := h.count("nf", EventFailed); got != 1 {
		t.Fatalf("%d failed events, want 1", got)
	}
}

func TestExitOnProbeRemembersLegacy(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("p", "exitonprobe")}, BackoffMin: time.Millisecond}, nil)
	h.mustEcho("p", "x")
	st := h.status("p")
	if st.Era != session.EraLegacy || st.Restarts != 0 || st.State != StateReady {
		t.Fatalf("status: %+v", st)
	}
	if got := h.count("p", EventStarted); got != 2 {
		t.Fatalf("%d starts, want 2 (probe, then legacy)", got)
	}
	if h.count("p", EventExited) != 0 {
		t.Fatalf("the probe exit was counted as a crash")
	}
	// After a crash the remembered verdict skips the probe.
	if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exit to be noticed", func() bool { return h.count("p", EventExited) == 1 })
	resp, err := h.s.Call(context.Background(), "p", toolCall("stats", nil), CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var stats struct {
		Methods map[string]int `json:"methods"`
	}
	if err := json.Unmarshal([]byte(text(t, resp)), &stats); err != nil {
		t.Fatal(err)
	}
	if stats.Methods["server/discover"] != 0 || stats.Methods["initialize"] != 1 {
		t.Fatalf("new child saw %v, want initialize and no probe", stats.Methods)
	}
	if got := h.count("p", EventStarted); got != 3 {
		t.Fatalf("%d starts, want 3", got)
	}
}

func TestUnknownDisabledInvalid(t *testing.T) {
	dis := fakeSpec("off", "modern")
	dis.Disabled = true
	h := newHarness(t, Options{Specs: []Spec{dis, fakeSpec("on", "modern")}}, nil)
	if _, err := h.echo("nope", "x"); !errors.Is(err, ErrUnknownServer) || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("unknown: %v", err)
	}
	if _, err := h.s.ServerStatus("nope"); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("unknown status: %v", err)
	}
	if _, err := h.echo("off", "x"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "disabled") {
		t.Fatalf("disabled: %v", err)
	}
	if st := h.status("off"); !st.Disabled || st.State != StateStopped {
		t.Fatalf("disabled status %+v", st)
	}
	_, err := h.s.Call(context.Background(), "on", &session.Request{Method: "tools/call", Params: json.RawMessage(`[1]`)}, CallOptions{})
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("array params: %v", err)
	}
	if got := h.count("on", EventStarted); got != 0 {
		t.Fatalf("an invalid request started the server")
	}
	if got, want := h.s.Names(), []string{"off", "on"}; !cmp.Equal(got, want) {
		t.Fatalf("Names %v", got)
	}
	if got := h.s.Status(); len(got) != 2 || got[0].Name != "off" || got[1].Name != "on" {
		t.Fatalf("Status %+v", got)
	}
}

func TestCallTimeoutOverrideIsCapped(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("t", "modern")}, MaxRequestTimeout: 50 * time.Millisecond}, nil)
	h.mustEcho("t", "warm")
	_, err := h.s.Call(context.Background(), "t", toolCall("sleep", map[string]any{"ms": 600000}), CallOptions{Timeout: time.Hour})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want deadline exceeded (capped)", err)
	}
	// The server survives a request timeout.
	h.mustEcho("t", "still there")
}

func TestNotificationsForwarded(t *testing.T) {
	got := make(chan session.Notification, 16)
	opts := Options{
		Specs: []Spec{fakeSpec("n", "legacy")},
		OnNotification: func(server string, n session.Notification) {
			if server == "n" {
				select {
				case got <- n:
				default:
				}
			}
		},
	}
	h := newHarness(t, opts, nil)
	if _, err := h.s.Call(context.Background(), "n", toolCall("changed", map[string]any{"kind": "tools"}), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	n := <-got
	if n.Method != "notifications/tools/list_changed" {
		t.Fatalf("notification %q", n.Method)
	}
}

func TestLogsAcrossRestarts(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("l", "modern")}}, nil)
	h.mustEcho("l", "x")
	pid1 := h.status("l").Pid
	if _, err := h.s.Restart(context.Background(), "l"); err != nil {
		t.Fatal(err)
	}
	pid2 := h.status("l").Pid
	// The new child's stderr is read concurrently: wait for its first line.
	seen := map[int]bool{}
	for deadline := time.Now().Add(10 * time.Second); ; {
		lines, err := h.s.Logs("l", 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lines {
			seen[l.Pid] = true
		}
		if seen[pid1] && seen[pid2] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("logs hold pids %v, want %d and %d", seen, pid1, pid2)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := h.s.Logs("nope", 1); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("Logs unknown: %v", err)
	}
}

// A JSON object of the child that is neither a request, a response nor a
// notification is counted, and the count is kept across a restart.
func TestMessagesInvalidAcrossRestarts(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("i", "modern")}}, nil)
	sendInvalid := func() {
		t.Helper()
		// The fake writes the invalid object before its answer, and the
		// session reads in order: it is counted once the call returns.
		resp, err := h.s.Call(context.Background(), "i", toolCall("invalid", nil), CallOptions{})
		if err != nil {
			t.Fatalf("invalid tool: %v", err)
		}
		if got := text(t, resp); got != "ok" {
			t.Fatalf("invalid tool = %q, want ok", got)
		}
	}
	sendInvalid()
	if st := h.status("i"); st.MessagesInvalid != 1 {
		t.Fatalf("MessagesInvalid = %d, want 1", st.MessagesInvalid)
	}
	st, err := h.s.Restart(context.Background(), "i")
	if err != nil || st.Restarts != 1 {
		t.Fatalf("Restart: %v %+v", err, st)
	}
	if st.MessagesInvalid != 1 {
		t.Fatalf("MessagesInvalid after a restart = %d, want 1 (kept)", st.MessagesInvalid)
	}
	sendInvalid()
	if st := h.status("i"); st.MessagesInvalid != 2 {
		t.Fatalf("MessagesInvalid = %d, want 2 (both processes)", st.MessagesInvalid)
	}
}

func TestList(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{
		pagerSpec("pages", "pages"), pagerSpec("cycle", "cycle"), pagerSpec("invalid", "invalid"),
		pagerSpec("runaway", "runaway"), pagerSpec("error", "error"), fakeSpec("fake", "modern"),
	}}, nil)
	names := func(t *testing.T, raw json.RawMessage) []string {
		t.Helper()
		var items []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &items); err != nil {
			t.Fatalf("not an array: %s", raw)
		}
		var out []string
		for _, it := range items {
			out = append(out, it.Name)
		}
		return out
	}
	ctx := context.Background()
	tests := []struct {
		server  string
		want    []string
		wantErr string
	}{
		{server: "pages", want: []string{"a", "b", "c", "d"}},
		{server: "invalid", want: []string{"a", "b"}},
		{server: "cycle", wantErr: "cursor cycle"},
		{server: "runaway", wantErr: "more than 1000 pages"},
		{server: "error", wantErr: "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			raw, err := h.s.List(ctx, tt.server, "tools/list", nil, CallOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := names(t, raw); !cmp.Equal(got, tt.want) {
				t.Fatalf("items %v, want %v", got, tt.want)
			}
		})
	}
	_, err := h.s.List(ctx, "error", "tools/list", nil, CallOptions{})
	var rpcErr *session.RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32603 {
		t.Fatalf("err %v, want a wrapped *session.RPCError", err)
	}
	// Against the modern fake, with a base request carrying params.
	base := &session.Request{Params: json.RawMessage(`{"cursor":"ignored"}`)}
	raw, err := h.s.List(ctx, "fake", "tools/list", base, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := names(t, raw); len(got) == 0 || got[0] != "echo" {
		t.Fatalf("fake tools %v", got)
	}
	raw, err = h.s.List(ctx, "fake", "resources/templates/list", nil, CallOptions{})
	if err != nil || string(raw) != "[]" {
		t.Fatalf("templates %s %v", raw, err)
	}
	if _, err := h.s.List(ctx, "fake", "tools/call", nil, CallOptions{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("non-list method: %v", err)
	}
}

func TestRestartPolicies(t *testing.T) {
	kill := func(t *testing.T, h *harness, name string) {
		t.Helper()
		h.mustEcho(name, "x")
		exits := h.count(name, EventExited)
		if err := syscall.Kill(h.status(name).Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the exit to be noticed", func() bool { return h.count(name, EventExited) == exits+1 })
	}
	always := fakeSpec("always", "modern")
	always.Restart = RestartAlways
	never := fakeSpec("never", "modern")
	never.Restart = RestartNever
	clock := newFakeClock()
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("onfailure", "modern"), always, never}}, clock.install)

	t.Run("on-failure restarts only with demand", func(t *testing.T) {
		kill(t, h, "onfailure")
		h.waitState("onfailure", StateBackoff)
		clock.fireNext(t)
		h.waitState("onfailure", StateStopped)
		if got := h.count("onfailure", EventStarted); got != 1 {
			t.Fatalf("%d starts, want 1 (no demand)", got)
		}
		// A call during backoff waits for the restart instead of failing.
		kill(t, h, "onfailure")
		h.waitState("onfailure", StateBackoff)
		done := make(chan error, 1)
		go func() {
			_, err := h.s.Call(context.Background(), "onfailure", toolCall("echo", nil), CallOptions{})
			done <- err
		}()
		waitFor(t, "the call to wait", func() bool { return h.status("onfailure").CallsInFlight == 1 })
		clock.fireNext(t)
		if err := <-done; err != nil {
			t.Fatalf("call during backoff: %v", err)
		}
		if st := h.status("onfailure"); st.State != StateReady || st.Restarts != 2 {
			t.Fatalf("state %s restarts %d", st.State, st.Restarts)
		}
	})
	t.Run("always restarts without demand", func(t *testing.T) {
		kill(t, h, "always")
		h.waitState("always", StateBackoff)
		clock.fireNext(t)
		st := h.waitState("always", StateReady)
		if st.Restarts != 1 || h.count("always", EventStarted) != 2 {
			t.Fatalf("restarts %d starts %d", st.Restarts, h.count("always", EventStarted))
		}
	})
	t.Run("never waits for a call", func(t *testing.T) {
		kill(t, h, "never")
		st := h.waitState("never", StateStopped)
		if st.ExplicitlyStopped || clock.pending() != 0 {
			t.Fatalf("explicit %v, pending timers %d", st.ExplicitlyStopped, clock.pending())
		}
		h.mustEcho("never", "again")
		if st := h.status("never"); st.Restarts != 1 || st.State != StateReady {
			t.Fatalf("state %s restarts %d", st.State, st.Restarts)
		}
	})
}

func TestStopDuringStart(t *testing.T) {
	slow := fakeSpec("slow", "silentprobe")
	slow.DiscoverTimeout = time.Hour // the probe never ends by itself
	h := newHarness(t, Options{Specs: []Spec{slow}}, nil)
	waiting := make(chan error, 1)
	go func() { _, err := h.echo("slow", "x"); waiting <- err }()
	var pid int
	waitFor(t, "the child to be spawned", func() bool {
		st := h.status("slow")
		pid = st.Pid
		return st.State == StateStarting && pid != 0
	})
	st, err := h.s.Stop(context.Background(), "slow")
	if err != nil || st.State != StateStopped || !pidGone(pid) {
		t.Fatalf("Stop: %v state %s pid %d gone %v", err, st.State, pid, pidGone(pid))
	}
	if err := <-waiting; !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("waiting call: %v", err)
	}
	if h.count("slow", EventExited) != 0 {
		t.Fatalf("a stop during start counted as a crash")
	}
}
