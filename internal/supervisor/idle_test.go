package supervisor

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// idleSpec is a lazily started fake with an idle timeout.
func idleSpec(name string, d time.Duration) Spec {
	spec := fakeSpec(name, "dual")
	spec.IdleTimeout = d
	return spec
}

// pendingDurations returns the durations of the timers not yet fired or
// stopped.
func (c *fakeClock) pendingDurations() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for _, x := range c.timers {
		if !x.stopped {
			out = append(out, x.d)
		}
	}
	return out
}

// fireNow fires the pending timer without advancing the clock (the test
// advanced it by hand) and returns its duration.
func (c *fakeClock) fireNow(t *testing.T) time.Duration { return c.fire(t, false) }

// waitIdleHandled waits until the loop handled a fired idle timer: either it
// armed a new one or the server left the ready state.
func waitIdleHandled(h *harness, clk *fakeClock, name string) Status {
	h.t.Helper()
	var st Status
	waitFor(h.t, "the idle timer handled", func() bool {
		st = h.status(name)
		return clk.pending() == 1 || st.State != StateReady
	})
	return st
}

func (h *harness) server(name string) *server {
	h.t.Helper()
	sv, err := h.s.lookup(name)
	if err != nil {
		h.t.Fatal(err)
	}
	return sv
}

func TestIdleStopThenLazyRestart(t *testing.T) {
	clk := newFakeClock()
	h := newHarness(t, Options{Specs: []Spec{idleSpec("srv", time.Minute)}}, clk.install)

	// A stream watching only mcpd's state events is no demand on the child.
	stream := h.subscribe("watcher", subscriptions.Watch{Servers: []string{"srv"}, State: true})

	h.mustEcho("srv", "a")
	if _, _, err := h.s.CallCached(context.Background(), "srv", &session.Request{Method: "tools/list"}, CallOptions{}); err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	first := h.waitState("srv", StateReady)
	if first.Cache.Entries == 0 {
		t.Fatalf("tools/list was not cached: %+v", first.Cache)
	}
	waitFor(t, "the idle timer", func() bool { return clk.pending() == 1 })
	if d := clk.fireNext(t); d != time.Minute {
		t.Fatalf("idle timer = %s, want 1m", d)
	}
	st := h.waitState("srv", StateStopped)
	waitFor(t, "idle child reaped", func() bool { return pidGone(first.Pid) })
	if st.ExplicitlyStopped || st.Restarts != 0 || !strings.HasPrefix(st.LastExit, "idle timeout") || st.LastError != "" {
		t.Errorf("after the idle stop: explicit %v restarts %d last exit %q last error %q; want a plain stop with exit \"idle timeout ...\"",
			st.ExplicitlyStopped, st.Restarts, st.LastExit, st.LastError)
	}
	if st.Cache.Entries != 0 {
		t.Errorf("cache entries after the idle stop = %d, want 0", st.Cache.Entries)
	}
	if n := h.count("srv", EventExited) + h.count("srv", EventCrashLoop) + h.count("srv", EventRestarting); n != 0 {
		t.Errorf("events %v: an idle stop is not a crash", h.kinds("srv"))
	}
	if n := clk.pending(); n != 0 {
		t.Errorf("%d timers pending after the idle stop, want none", n)
	}
	// The watcher heard why.
	waitFor(t, "stopped event with the idle reason", func() bool {
		return tookEvent(stream, func(ev *subscriptions.Event) bool {
			return ev.Kind == subscriptions.KindState && ev.State == string(EventStopped) && strings.HasPrefix(ev.Exit, "idle timeout")
		})
	})

	// The next call starts it again.
	h.mustEcho("srv", "b")
	second := h.status("srv")
	if second.State != StateReady || second.Pid == first.Pid || second.Pid == 0 {
		t.Fatalf("after the next call: state %s pid %d (first pid %d), want ready with a new pid", second.State, second.Pid, first.Pid)
	}
	if second.Restarts != 0 {
		t.Errorf("restarts = %d, want 0 (a lazy start is not a restart)", second.Restarts)
	}
	// And it is watched for idleness again.
	waitFor(t, "a new idle timer", func() bool { return clk.pending() == 1 })
}

func TestIdleCallInFlightPreventsStop(t *testing.T) {
	clk := newFakeClock()
	h := newHarness(t, Options{Specs: []Spec{idleSpec("srv", time.Minute)}}, clk.install)
	h.mustEcho("srv", "a")
	pid := h.waitState("srv", StateReady).Pid
	waitFor(t, "the idle timer", func() bool { return clk.pending() == 1 })

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := h.s.Call(ctx, "srv", toolCall("sleep", map[string]any{"ms": 600000}), CallOptions{})
		done <- err
	}()
	waitFor(t, "the call in flight on the child", func() bool { return countStderr(h, "srv", pid, "recv tools/call") == 2 })

	clk.fireNext(t)
	st := waitIdleHandled(h, clk, "srv")
	if st.State != StateReady || st.Pid != pid {
		t.Fatalf("with a call in flight: state %s pid %d, want ready pid %d", st.State, st.Pid, pid)
	}
	if d := clk.pendingDurations(); len(d) != 1 || d[0] != time.Minute {
		t.Errorf("re-armed idle timer = %v, want [1m]", d)
	}

	cancel()
	if err := <-done; err == nil {
		t.Fatal("cancelled call succeeded")
	}
	clk.fireNext(t)
	h.waitState("srv", StateStopped)
	waitFor(t, "idle child reaped", func() bool { return pidGone(pid) })
}

func TestIdleSubscriptionPreventsStop(t *testing.T) {
	clk := newFakeClock()
	h := newHarness(t, Options{Specs: []Spec{idleSpec("srv", time.Minute)}}, clk.install)
	sv := h.server("srv")

	stream := h.subscribe("app", subscriptions.Watch{Servers: []string{"srv"}, ToolsListChanged: true})
	pid := h.waitState("srv", StateReady).Pid // started by the subscription
	waitFor(t, "the demand reported", func() bool { return sv.idle.demand.Load() })
	waitFor(t, "the idle timer", func() bool { return clk.pending() == 1 })

	clk.fireNext(t)
	st := waitIdleHandled(h, clk, "srv")
	if st.State != StateReady || st.Pid != pid {
		t.Fatalf("with an open subscription: state %s pid %d, want ready pid %d", st.State, st.Pid, pid)
	}

	// The subscription ends half-way through the next period: the idle
	// period starts again from there.
	clk.advance(30 * time.Second)
	stream.Close()
	waitFor(t, "the end of the demand reported", func() bool { return !sv.idle.demand.Load() })
	clk.advance(30 * time.Second)
	if d := clk.fireNow(t); d != time.Minute {
		t.Fatalf("idle timer = %s, want 1m", d)
	}
	st = waitIdleHandled(h, clk, "srv")
	if st.State != StateReady || st.Pid != pid {
		t.Fatalf("30s after the subscription ended: state %s pid %d, want ready pid %d", st.State, st.Pid, pid)
	}
	if d := clk.pendingDurations(); len(d) != 1 || d[0] != 30*time.Second {
		t.Fatalf("re-armed idle timer = %v, want [30s] (the rest of the period)", d)
	}
	clk.fireNext(t)
	h.waitState("srv", StateStopped)
	waitFor(t, "idle child reaped", func() bool { return pidGone(pid) })
}

// A change of demand is visible only with the activity it records: the
// idle timer may fire the moment the flag flips (the end of a subscription
// reported from the manager's goroutine), and must then see the activity.
func TestIdleDemandChangeRecordsActivityFirst(t *testing.T) {
	clk := newFakeClock()
	h := newHarness(t, Options{Specs: []Spec{idleSpec("srv", time.Hour)}}, clk.install)
	sv := h.server("srv")
	h.mustEcho("srv", "a")
	h.waitState("srv", StateReady)
	waitFor(t, "the idle timer", func() bool { return clk.pending() == 1 })

	target := subscriptions.Target{Server: "srv"}
	for i := range 200 {
		clk.advance(time.Second)
		at := clk.Now().UnixNano()
		demand := i%2 == 0
		reported := make(chan struct{})
		go func() {
			defer close(reported)
			h.s.onSubsDemand(target, demand)
		}()
		for sv.idle.demand.Load() != demand {
			runtime.Gosched()
		}
		if last := sv.idle.last.Load(); last < at {
			t.Fatalf("report %d: demand %v visible with the last activity %s before the report",
				i, demand, time.Duration(at-last))
		}
		<-reported
	}
}

func TestIdleNeverStopsKeepRunningServers(t *testing.T) {
	clk := newFakeClock()
	auto := idleSpec("auto", time.Minute)
	auto.Autostart = true
	always := idleSpec("always", time.Minute)
	always.Restart = RestartAlways
	h := newHarness(t, Options{Specs: []Spec{auto, always}}, clk.install)
	h.waitState("auto", StateReady)
	h.mustEcho("always", "a")
	// A command is a round trip through each loop: every event before it,
	// and the idle bookkeeping after them, has been handled.
	for _, name := range []string{"auto", "always"} {
		if _, err := h.s.Start(context.Background(), name); err != nil {
			t.Fatalf("Start %s: %v", name, err)
		}
	}
	if d := clk.pendingDurations(); len(d) != 0 {
		t.Fatalf("timers %v armed for autostart / restart=always servers, want none", d)
	}
}

func TestIdleTimeoutReloadAppliesInPlace(t *testing.T) {
	clk := newFakeClock()
	spec := idleSpec("srv", 10*time.Minute)
	h := newHarness(t, Options{Specs: []Spec{spec}}, clk.install)
	h.mustEcho("srv", "a")
	pid := h.waitState("srv", StateReady).Pid
	waitFor(t, "the idle timer", func() bool { return clk.pending() == 1 })

	shorter := spec
	shorter.IdleTimeout = time.Minute
	if res := mustApply(t, h.s, shorter); len(res.Updated) != 1 || len(res.Restarted) != 0 {
		t.Fatalf("ApplyResult = %+v, want srv updated in place", res)
	}
	if _, err := h.s.Start(context.Background(), "srv"); err != nil { // loop round trip
		t.Fatal(err)
	}
	if d := clk.pendingDurations(); len(d) != 1 || d[0] != time.Minute {
		t.Fatalf("idle timer after the reload = %v, want [1m]", d)
	}
	if st := h.status("srv"); st.Pid != pid || st.State != StateReady {
		t.Fatalf("after the reload: state %s pid %d, want ready pid %d", st.State, st.Pid, pid)
	}
	clk.fireNext(t)
	h.waitState("srv", StateStopped)
	waitFor(t, "idle child reaped", func() bool { return pidGone(pid) })

	// Turning it off disarms the timer of the running child.
	h.mustEcho("srv", "b")
	pid = h.waitState("srv", StateReady).Pid
	waitFor(t, "the idle timer", func() bool { return clk.pending() == 1 })
	off := spec
	off.IdleTimeout = 0
	mustApply(t, h.s, off)
	if _, err := h.s.Start(context.Background(), "srv"); err != nil {
		t.Fatal(err)
	}
	if d := clk.pendingDurations(); len(d) != 0 {
		t.Fatalf("timers %v after idleTimeout was turned off, want none", d)
	}
	if st := h.status("srv"); st.Pid != pid || st.State != StateReady {
		t.Fatalf("after turning it off: state %s pid %d, want ready pid %d", st.State, st.Pid, pid)
	}
}

func TestCompareSpecsIdleTimeoutIsASetting(t *testing.T) {
	a := idleSpec("srv", time.Minute)
	b := a
	b.IdleTimeout = time.Hour
	if got := CompareSpecs(a, b); got != SpecSettings {
		t.Errorf("CompareSpecs = %d, want SpecSettings", got)
	}
}
