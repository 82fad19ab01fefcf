package supervisor

import (
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// This file implements the optional per-server idle timeout (Spec.IdleTimeout;
// design: "stop a child that has had no requests, no subscriptions for that
// long").
//
// A server is watched for idleness while it is ready, has IdleTimeout > 0,
// and is neither autostart nor restart "always" (both mean "keep it
// running"), and no reload restart is pending. While watched:
//
//   - every call that finishes (callDone) records the time of the last
//     activity, without a round trip through the loop;
//   - a change of the apps' subscription demand on the server (the
//     subscription manager's OnDemand hook) records it too; mcpd's own
//     state-event watchers are not demand;
//   - the loop arms one timer on the supervisor's clock for the rest of the
//     idle period. When it fires, a call in flight or an app subscription
//     that wants something from the child starts a new idle period; a
//     period that another activity extended is re-armed for the rest;
//     otherwise the child is stopped gracefully (the normal stop sequence)
//     into state stopped.
//
// An idle stop is not an explicit stop (the next call starts the server
// again lazily), not a crash (no backoff, no crash-loop count, no restart
// counted), and empties the cache like any stop. Its exit is reported as
// "idle timeout (exit status 0)" in LastExit and in the stopped event.

// idleState is the idle-timeout part of a server.
type idleState struct {
	// watching is set (by the loop) while the server is watched for
	// idleness; calls record their activity only then.
	watching atomic.Bool
	// last is the time of the last activity, in Unix nanoseconds of the
	// supervisor's clock.
	last atomic.Int64
	// demand is the apps' subscription demand last reported (OnDemand). It
	// only decides when a report is a change worth recording as activity;
	// the idle check asks the subscription manager for the live demand.
	demand atomic.Bool
	// demandMu serialises the reports of demand (onSubsDemand), so that a
	// change and the activity it records are one step: whoever sees demand
	// changed also sees the activity. It guards no other field and is never
	// held with another lock.
	demandMu sync.Mutex

	// Loop-owned.
	c        <-chan time.Time // the idle timer; nil when not armed
	stop     func() bool
	armedFor time.Duration // the IdleTimeout the armed timer is for
	pid      int           // the child being stopped for idleness, until reaped
}

// idleTouch records activity now, if the server is watched for idleness.
// Safe from any goroutine.
func (sv *server) idleTouch() {
	if !sv.idle.watching.Load() {
		return
	}
	sv.idleTouchAt(sv.sup.now())
}

// idleTouchAt moves the last activity forward to t (never backward: touches
// from concurrent calls may arrive out of order).
func (sv *server) idleTouchAt(t time.Time) {
	n := t.UnixNano()
	for {
		old := sv.idle.last.Load()
		if n <= old || sv.idle.last.CompareAndSwap(old, n) {
			return
		}
	}
}

// idleWant returns the idle timeout that applies now, or 0 if the server is
// not to be watched for idleness in its current state (loop only).
func (sv *server) idleWant() time.Duration {
	sp := &sv.spec // only the loop writes it (setSpec)
	if sp.IdleTimeout <= 0 || sp.Autostart || sp.Restart == RestartAlways || sp.Disabled {
		return 0
	}
	if sv.shutting || sv.state != StateReady || sv.cur == nil || sv.ready.Load() != sv.cur {
		return 0
	}
	if sv.startAfter || sv.rl.drainedC != nil || sv.rl.restartWhenReady {
		return 0 // a restart is coming anyway
	}
	return sp.IdleTimeout
}

// idleSync arms, re-arms or disarms the idle timer to match the server's
// state and spec; the loop runs it after every event.
func (sv *server) idleSync() {
	want := sv.idleWant()
	if want == 0 {
		sv.idle.watching.Store(false)
		sv.idleDisarm()
		return
	}
	now := sv.sup.now()
	if !sv.idle.watching.Load() {
		// Just became ready (or watchable): the idle period starts now.
		sv.idle.last.Store(now.UnixNano())
		sv.idle.watching.Store(true)
	}
	if sv.idle.c != nil && sv.idle.armedFor == want {
		return
	}
	sv.idleDisarm()
	rest := want - now.Sub(time.Unix(0, sv.idle.last.Load()))
	sv.idle.c, sv.idle.stop = sv.sup.after(min(max(rest, 0), want))
	sv.idle.armedFor = want
}

// idleDisarm stops the idle timer (loop only).
func (sv *server) idleDisarm() {
	if sv.idle.stop != nil {
		sv.idle.stop()
	}
	sv.idle.c, sv.idle.stop, sv.idle.armedFor = nil, nil, 0
}

// onIdleTimer handles the idle timer (loop only): it stops the child if it
// has been idle for the whole timeout; otherwise idleSync re-arms the timer.
func (sv *server) onIdleTimer() {
	sv.idle.c, sv.idle.stop, sv.idle.armedFor = nil, nil, 0
	want := sv.idleWant()
	if want == 0 {
		return
	}
	now := sv.sup.now()
	if sv.idleBusy() {
		// Busy: a new idle period starts now.
		sv.idleTouchAt(now)
		return
	}
	// Read after the live demand: an end of demand that the check above was
	// the first to see recorded its activity by now (onSubsDemand).
	if now.Sub(time.Unix(0, sv.idle.last.Load())) < want {
		return // there was activity since the timer was armed
	}
	// Take the child out of service before the last look at the calls in
	// flight and the subscriptions: a call counts itself in flight, and a
	// stream is registered, before either loads the ready child, so either
	// it sees none (and waits for the next start) or the check below sees
	// it.
	c := sv.cur
	if !sv.ready.CompareAndSwap(c, nil) {
		return
	}
	if sv.idleBusy() {
		sv.ready.Store(c)
		sv.idleTouchAt(now)
		return
	}
	sv.log.Info("server idle, stopping", zap.Int("pid", c.pid), zap.Duration("idle_timeout", want))
	sv.idle.pid = c.pid
	sv.stopChild(serverUnavailable(sv.spec.Name, " was stopped after being idle for %s", want))
	sv.setState(StateStopping)
}

// idleExit returns how child c exited for status and events: the exit
// status, prefixed with the reason when it was stopped for idleness (loop
// only).
func (sv *server) idleExit(c *child, exit string) string {
	if sv.idle.pid == 0 || sv.idle.pid != c.pid {
		return exit
	}
	sv.idle.pid = 0
	return "idle timeout (" + exit + ")"
}

// idleBusy reports whether a call is in flight on sv or an app stream wants
// something from its child, asking the subscription manager now rather than
// trusting the last report.
func (sv *server) idleBusy() bool {
	return sv.inFlight.Load() > 0 || sv.subsDemand()
}

// onSubsDemand is the subscription manager's OnDemand hook: a change of the
// apps' demand on a server counts as activity. Reports come from every
// computation of the demand (any goroutine, the loop's idle check
// included); the activity is recorded before the change is visible. It must
// not block.
func (s *Supervisor) onSubsDemand(t subscriptions.Target, demand bool) {
	sv, err := s.targetServer(t)
	if err != nil {
		return
	}
	sv.idle.demandMu.Lock()
	defer sv.idle.demandMu.Unlock()
	if sv.idle.demand.Load() != demand {
		sv.idleTouch()
		sv.idle.demand.Store(demand)
	}
}
