package supervisor

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/session"
)

// beginStart begins a start of the child on a goroutine of its own (the
// result comes back to the loop), unless the server cannot run one.
func (sv *server) beginStart() {
	if sv.spec.Invalid != "" {
		sv.failInvalid() // a start that became due after the config broke
		return
	}
	if sv.sharedBase() {
		// Its instances run the children (instances.go).
		sv.setState(StateStopped)
		sv.replyAll(&sv.waiters, reply{err: sv.sharedError()})
		sv.replyAll(&sv.startWaiters, reply{})
		return
	}
	sv.stopTimer()
	sv.startAfter = false // this is the start that was due
	if sv.restartNext {
		sv.restartNext = false
		sv.update(func(st *snapshot) { st.restarts++ })
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	sv.startCancel = cancel
	sv.setState(StateStarting)
	proto := sv.protocol()
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		sv.startRes <- sv.attempt(ctx, proto)
	}()
}

func (sv *server) onStartResult(r startResult) {
	sv.startCancel(nil)
	sv.startCancel = nil
	if r.verdict != "" {
		sv.verdict = r.verdict
	}
	if r.c != nil {
		sv.onStarted(r.c)
		return
	}
	sv.update(func(st *snapshot) {
		st.pid = 0
		st.lastError = r.err.Error()
		if r.exit != "" {
			st.lastExit = r.exit
		}
	})
	switch {
	case loginRequired(r.err) && !r.canceled && !sv.shutting && !sv.explicitStop:
		sv.needLogin(r.err)
	case sv.networkFailure(r.err) && !r.canceled && !sv.shutting && !sv.explicitStop:
		sv.replyAll(&sv.startWaiters, reply{err: r.err})
		sv.afterNetworkFailure(r.err, false) // netfail.go
	case r.canceled || sv.shutting || sv.explicitStop:
		sv.setState(StateStopped)
		sv.emit(EventStopped, 0, "", "")
		sv.replyAll(&sv.stopWaiters, reply{})
		if sv.startAfter && !sv.shutting {
			sv.startAfter = false
			sv.beginStart()
		}
	case r.permanent:
		sv.log.Error("server failed", zap.Error(r.err))
		sv.setState(StateFailed)
		sv.emit(EventFailed, 0, "", r.err.Error())
		sv.failErr = r.err
		err := sv.failedError(r.err)
		sv.replyAll(&sv.waiters, reply{err: err})
		sv.replyAll(&sv.startWaiters, reply{err: err})
	default:
		// "Crash-on-start" and handshake timeouts count as unexpected exits.
		sv.log.Warn("server start failed", zap.Error(r.err), zap.String("exit", r.exit))
		sv.emit(EventExited, 0, r.exit, r.err.Error())
		sv.failedStarts++
		sv.lastStartErr = r.err
		sv.afterUnexpectedExit(r.err)
		sv.noteCounted(true) // netfail.go
		sv.replyAll(&sv.startWaiters, reply{err: r.err})
		if r.timedOut {
			// The calls that waited through a whole start timeout are
			// told why, not kept for the next attempt's.
			sv.replyAll(&sv.waiters, reply{err: &unavailableError{
				msg: fmt.Sprintf("server %q is not ready: %s", sv.spec.Name, r.err), cause: r.err, causeInMsg: true, server: sv.spec.Name}})
		}
	}
}

func (sv *server) onStarted(c *child) {
	sv.cur = c
	sv.wg.Add(1)
	go sv.watch(c)
	if sv.spec.Protocol == "" || sv.spec.Protocol == session.ProtocolAuto {
		// "The verdict is remembered for that server across restarts."
		sv.verdict = string(c.info.Era)
	}
	if sv.shutting || sv.explicitStop {
		// A stop arrived while the handshake was finishing.
		cause := errShuttingDown
		if !sv.shutting {
			cause = serverUnavailable(sv.spec.Name, " was stopped")
		}
		sv.stopChild(cause)
		sv.setState(StateStopping)
		return
	}
	if sv.startAfter {
		// A restart (or a config made invalid) arrived while the
		// handshake was finishing: this child is stopped, and the start
		// due once it is reaped does what was asked (beginStart).
		sv.stopChild(serverUnavailable(sv.spec.Name, " is restarting"))
		sv.setState(StateStopping)
		return
	}
	sv.failedStarts = 0
	sv.net = netState{}
	now := sv.sup.now()
	sv.update(func(st *snapshot) {
		st.pid = c.pid
		st.startedAt = now
		st.info = c.info
		st.proc = c.proc
		st.sess = c.sess
		st.lastError = ""
	})
	sv.setState(StateReady)
	sv.ready.Store(c)
	sv.log.Info("server ready", zap.Int("pid", c.pid), zap.String("era", string(c.info.Era)),
		zap.String("protocol_version", c.info.ProtocolVersion))
	sv.emit(EventReady, c.pid, "", "")
	sv.replyAll(&sv.waiters, reply{c: c})
	sv.replyAll(&sv.startWaiters, reply{})
}

// watch waits for c to end (stdout closed, process exited, or mcpd asking it
// to stop), runs the stop sequence if the process is still alive, and
// reports the reaped child to the loop.
func (sv *server) watch(c *child) {
	defer sv.wg.Done()
	select {
	case <-c.sess.Done():
	case <-c.proc.Done():
	case <-c.ctx.Done():
	}
	select {
	case <-c.proc.Done():
	default:
		// MCP stdio shutdown: close stdin, SIGTERM, SIGKILL (transport).
		if err := c.proc.Stop(); err != nil {
			sv.log.Debug("stop sequence", zap.Int("pid", c.pid), zap.Error(err))
		}
	}
	<-c.proc.Done()
	c.sess.Wait()
	sv.exitRes <- exitReport{c: c, err: c.proc.ExitError()}
}

func (sv *server) onExit(e exitReport) {
	c := e.c
	if sv.cur == c {
		sv.cur = nil
	}
	sv.ready.CompareAndSwap(c, nil)
	exit := sv.idleExit(c, describeEnd(c.proc, e.err)) // idle.go
	hung := c.proc.Hung()
	// Calls still returning from this child report the exit (a stopped
	// child's context was already cancelled with the stop reason).
	switch {
	case hung != nil && !c.expected:
		c.cancel(sv.hungError(hung))
	case c.pid == 0 && loginRequired(e.err):
		c.cancel(sv.loginError(e.err)) // a remote server refused the token
	default:
		c.cancel(&unavailableError{msg: fmt.Sprintf("server %q exited (%s)", sv.spec.Name, exit), cause: errExited, causeInMsg: true, server: sv.spec.Name})
	}
	ps, ss := c.proc.Stats(), c.sess.Stats()
	sv.update(func(st *snapshot) {
		st.pid = 0
		st.startedAt = time.Time{}
		st.lastExit = exit
		st.proc, st.sess = nil, nil
		st.skipped += ps.LinesSkipped
		st.oversize += ps.LinesOversize
		st.dropped += ss.ResponsesDropped
		st.invalid += ss.MessagesInvalid
	})
	if c.expected {
		sv.log.Info("server stopped", zap.Int("pid", c.pid), zap.String("exit", exit))
		sv.setState(StateStopped)
		sv.emit(EventStopped, c.pid, exit, "")
		sv.replyAll(&sv.stopWaiters, reply{})
		if c.pid == 0 && sv.explicitStop {
			// A remote server stopped by the operator keeps no idle
			// connections open until the transport's idle timeout.
			sv.httpPool().Close()
		}
		if (sv.startAfter || sv.demand()) && !sv.shutting && !sv.explicitStop {
			sv.startAfter = false
			sv.beginStart()
		}
		return
	}
	err := fmt.Errorf("server %q exited unexpectedly (%s)", sv.spec.Name, exit)
	if c.pid == 0 {
		err = fmt.Errorf("connection to server %q lost: %s", sv.spec.Name, exit)
	}
	if sv.remoteExit(c, e.err, err) { // remote.go
		return
	}
	if hung != nil {
		// Killed by mcpd, but for the child's fault: a crash.
		err = fmt.Errorf("%w (stdinTimeout); it was killed (%s)", hung, exit)
	}
	sv.update(func(st *snapshot) { st.lastError = err.Error() })
	sv.log.Warn("server exited", zap.Int("pid", c.pid), zap.String("exit", exit))
	sv.emit(EventExited, c.pid, exit, err.Error())
	sv.afterUnexpectedExit(err)
	sv.noteCounted(false) // netfail.go
}

// afterUnexpectedExit applies the crash-loop bound and the restart policy
// (loop only). "N unexpected exits within a window (default 5 in 60 s) →
// crashloop"; so do N start attempts failed in a row, however long each
// took (a handshake that times out after 30 s never makes 5 in 60 s);
// otherwise back off exponentially and restart if there is demand.
func (sv *server) afterUnexpectedExit(err error) {
	now := sv.sup.now()
	window := sv.sup.opts.CrashLoopWindow
	kept := sv.exits[:0]
	for _, t := range sv.exits {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	sv.exits = append(kept, now)
	sv.restartNext = true

	if len(sv.exits) >= sv.sup.opts.CrashLoopMax || sv.failedStarts >= sv.sup.opts.CrashLoopMax {
		sv.log.Error("server in crash loop", zap.Int("exits", len(sv.exits)),
			zap.Duration("window", window), zap.Duration("cooldown", sv.sup.opts.CrashLoopCooldown))
		sv.setState(StateCrashLoop)
		sv.setTimer(sv.sup.opts.CrashLoopCooldown)
		cerr := sv.crashLoopError() // after setTimer: it says how long
		sv.emit(EventCrashLoop, 0, sv.lastExit(), cerr.Error())
		sv.replyAll(&sv.waiters, reply{err: cerr})
		return
	}
	if sv.spec.Restart == RestartNever {
		sv.setState(StateStopped)
		sv.replyAll(&sv.waiters, reply{err: unavailable(nil, "%s; restart policy is never", err)})
		return
	}
	d := sv.sup.bo.delay(len(sv.exits))
	sv.log.Info("restarting", zap.Duration("backoff", d), zap.Int("recent_exits", len(sv.exits)))
	sv.setState(StateBackoff)
	sv.setTimer(d)
	sv.emit(EventRestarting, 0, "", "")
}

// forgetExits clears the crash-loop bound's count (loop only).
func (sv *server) forgetExits() {
	sv.exits = nil
	sv.failedStarts = 0
	sv.net = netState{}
}

func (sv *server) onTimer() {
	switch sv.state {
	case StateBackoff:
		if sv.demand() || (isRemote(&sv.spec) && sv.reconnects()) { // netfail.go
			sv.beginStart()
			return
		}
		// No demand: idle until the next call starts it.
		sv.setState(StateStopped)
	case StateCrashLoop:
		sv.log.Info("crash loop cooldown over")
		sv.forgetExits()
		// Streams opened during the crash loop wait for the server (their
		// acknowledgement said why): they are demand, as a caller is.
		wanted := sv.spec.Autostart || sv.spec.Restart == RestartAlways || sv.subsDemand()
		if sv.spec.Restart != RestartNever && !sv.spec.Disabled && wanted {
			sv.beginStart()
			return
		}
		sv.setState(StateStopped)
	}
}
