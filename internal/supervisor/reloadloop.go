package supervisor

import (
	"context"
	"maps"
	"slices"

	"go.uber.org/zap"
)

// The per-server part of a live reload (reload.go): it runs on the
// server's loop goroutine (cmdReconfigure, cmdRemove), like every other
// state change, and drains the calls in flight before a restart or a
// removal stops the child.

// reloadState is the reload part of a server.
type reloadState struct {
	// idle receives a token whenever the calls in flight drop to zero.
	idle chan struct{}
	// gone is closed when the loop has exited (a removed server); commands
	// sent after it fail instead of blocking.
	gone chan struct{}

	// Loop-owned.
	drainedC <-chan struct{} // receives when a drain finished; nil when none runs
	pending  cmdKind         // after the drain: cmdReconfigure (restart) or cmdRemove
	// restartWhenReady: a start of the old spec was under way when the
	// identity changed; restart as soon as it is ready.
	restartWhenReady bool
}

func newReloadState() reloadState {
	return reloadState{idle: make(chan struct{}, 1), gone: make(chan struct{})}
}

// callDone ends one call in flight (Supervisor.Call).
func (sv *server) callDone() {
	sv.idleTouch() // idle.go
	if sv.inFlight.Add(-1) == 0 {
		select {
		case sv.rl.idle <- struct{}{}:
		default:
		}
	}
}

// currentSpec returns a copy of the server's spec; safe from any goroutine.
func (sv *server) currentSpec() Spec {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sp := sv.spec
	sp.Args = slices.Clone(sp.Args)
	sp.Env = maps.Clone(sp.Env)
	return sp
}

// setSpec installs a new spec of the same name. It writes field by field,
// never the name, which other goroutines read without the lock (it never
// changes). Only the loop (or Apply before Run) calls it.
func (sv *server) setSpec(sp Spec) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	o := &sv.spec
	o.Command, o.Args, o.Env, o.Cwd, o.Protocol = sp.Command, slices.Clone(sp.Args), maps.Clone(sp.Env), sp.Cwd, sp.Protocol
	o.Autostart, o.Restart = sp.Autostart, sp.Restart
	o.RequestTimeout, o.ShutdownGrace, o.DiscoverTimeout = sp.RequestTimeout, sp.ShutdownGrace, sp.DiscoverTimeout
	o.MaxLineSize, o.Disabled, o.Cache = sp.MaxLineSize, sp.Disabled, sp.Cache
	o.Roots, o.Sampling, o.Elicitation = sp.Roots, sp.Sampling, sp.Elicitation
	o.ClientCapabilities = sp.ClientCapabilities // never modified once made
	o.RootPaths = slices.Clone(sp.RootPaths)
	o.IdleTimeout, o.StdinTimeout = sp.IdleTimeout, sp.StdinTimeout
	o.Remote = sp.Remote // never modified once made
	o.Sandbox = sp.Sandbox
	o.Invalid = sp.Invalid
	o.Pin = sp.Pin
	o.Share, o.MaxInstances = sp.Share, sp.MaxInstances
	sv.shared.Store(sv.inst == nil && isShared(sp.Share))
}

// post hands cmd to the loop and returns once the loop has applied it (a
// reconfigure has installed the new spec, a removal has begun draining), or
// the loop is gone, or the supervisor shuts down. What the command starts
// (drains, restarts) goes on in the background.
func (sv *server) post(cmd command) {
	cmd.ctx = context.Background()
	cmd.reply = make(chan reply, 1)
	sv.wake() // dormant.go
	select {
	case sv.cmds <- cmd:
	case <-sv.rl.gone:
		return
	case <-sv.sup.quit:
		return
	}
	select {
	case <-cmd.reply:
	case <-sv.rl.gone:
	case <-sv.sup.quit:
	}
}

// handleReload handles cmdReconfigure and cmdRemove (loop only); it reports
// whether cmd was one of them.
func (sv *server) handleReload(cmd command) bool {
	switch cmd.kind {
	case cmdReconfigure:
		if !sv.shutting {
			sv.reconfigure(*cmd.spec, cmd.restart)
		}
		cmd.reply <- reply{}
		return true
	case cmdRemove:
		if !sv.shutting {
			sv.log.Info("server removed from the config")
			sv.rl.restartWhenReady = false
			sv.startDrain(cmdRemove)
		}
		cmd.reply <- reply{}
		return true
	}
	return false
}

// reconfigure installs spec (loop only) and restarts the child if its
// process identity changed.
func (sv *server) reconfigure(spec Spec, restart bool) {
	old := sv.spec
	sv.setSpec(spec)
	if old.Cache != spec.Cache {
		sv.cache.SetPolicy(parseCachePolicy(sv, spec))
	}
	sv.log.Info("server config updated", zap.Bool("restart", restart))
	if restart {
		// A new command may be another server: forget the era verdict.
		sv.verdict = ""
		sv.cache.Clear()
	} else {
		sv.announceRoots(old, spec) // roots.go
	}
	if spec.Invalid != "" {
		sv.reconfigureInvalid() // invalid.go
		return
	}
	if old.Invalid != "" {
		sv.update(func(st *snapshot) { st.lastError = "" })
	}
	switch {
	case spec.Disabled:
		if !old.Disabled || old.Invalid != "" {
			sv.disable()
		}
		return
	case sv.rl.drainedC != nil:
		// A restart is already waiting for the drain; it uses the new spec.
		return
	}
	switch sv.state {
	case StateFailed, StateCrashLoop:
		if restart || old.Disabled || old.Invalid != "" {
			// The config was fixed (or changed): try again from scratch.
			sv.forgetExits()
			sv.stopTimer()
			sv.setState(StateStopped)
			if sv.demand() {
				sv.beginStart()
			}
		}
		return
	case StateBackoff:
		// The pending restart will use the new spec.
		return
	}
	if restart && sv.cur != nil {
		sv.startDrain(cmdReconfigure)
		return
	}
	if restart && sv.startCancel != nil {
		sv.rl.restartWhenReady = true
		return
	}
	if sv.state == StateStopped && sv.cur == nil && sv.startCancel == nil && !sv.explicitStop &&
		spec.Autostart && (old.Disabled || !old.Autostart || restart) {
		sv.beginStart()
	}
}

// disable stops the child of a server the config now disables; unlike an
// operator's stop, enabling it again in the config brings it back.
func (sv *server) disable() {
	errDisabled := serverUnavailable(sv.spec.Name, " is disabled in the config")
	sv.stopTimer()
	sv.startAfter = false
	sv.replyAll(&sv.waiters, reply{err: errDisabled})
	sv.replyAll(&sv.startWaiters, reply{err: errDisabled})
	switch {
	case sv.cur != nil:
		sv.stopChild(errDisabled)
		sv.setState(StateStopping)
	case sv.startCancel != nil:
		sv.startCancel(errDisabled)
		sv.setState(StateStopping)
	default:
		sv.setState(StateStopped)
	}
}

// startDrain waits (in a goroutine) for the calls in flight to finish, at
// most DrainTimeout, then runs the pending action on the loop (afterDrain).
func (sv *server) startDrain(action cmdKind) {
	if action == cmdRemove || sv.rl.pending == 0 {
		sv.rl.pending = action
	}
	if sv.rl.drainedC != nil {
		return
	}
	done := make(chan struct{}, 1)
	sv.rl.drainedC = done
	bound := sv.sup.drainTimeout()
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		defer func() { done <- struct{}{} }()
		timeout, stop := sv.sup.after(bound)
		defer stop()
		for sv.inFlight.Load() > 0 {
			select {
			case <-sv.rl.idle:
			case <-timeout:
				sv.log.Warn("calls still in flight after the drain timeout; stopping anyway",
					zap.Int64("calls_in_flight", sv.inFlight.Load()), zap.Duration("drain_timeout", bound))
				return
			case <-sv.sup.quit:
				return
			}
		}
	}()
}

// afterDrain runs the action the drain was waiting for (loop only).
func (sv *server) afterDrain() {
	action := sv.rl.pending
	sv.rl.drainedC, sv.rl.pending = nil, 0
	if sv.shutting {
		return
	}
	switch action {
	case cmdRemove:
		sv.remove()
	case cmdReconfigure:
		sv.restartForReload()
	}
}

// afterEvent runs after every event of the loop (loop only): it restarts a
// child that a start of an outdated spec just made ready.
func (sv *server) afterEvent() {
	if !sv.rl.restartWhenReady || sv.startCancel != nil || sv.rl.drainedC != nil {
		return
	}
	sv.rl.restartWhenReady = false
	if sv.cur != nil && sv.state == StateReady && !sv.shutting {
		sv.startDrain(cmdReconfigure)
	}
}

// remove stops the server for good; the loop exits once the child is reaped.
func (sv *server) remove() {
	errRemoved := serverUnavailable(sv.spec.Name, " was removed from the config")
	sv.shutting = true
	sv.stopTimer()
	sv.startAfter = false
	sv.replyAll(&sv.waiters, reply{err: errRemoved})
	sv.replyAll(&sv.startWaiters, reply{err: errRemoved})
	if sv.startCancel != nil {
		sv.startCancel(errRemoved)
	}
	if sv.cur != nil {
		sv.stopChild(errRemoved)
	}
	if sv.cur != nil || sv.startCancel != nil {
		sv.setState(StateStopping)
	}
}

// restartForReload replaces the child with one of the new spec (loop only).
func (sv *server) restartForReload() {
	cause := serverUnavailable(sv.spec.Name, " is restarting for a config change")
	sv.forgetExits()
	switch {
	case sv.spec.Invalid != "" && sv.cur == nil && sv.startCancel == nil:
		// The child went away during the drain: nothing to stop.
		sv.failInvalid() // invalid.go
	case sv.cur != nil:
		sv.restartNext = true
		sv.stopChild(cause)
		sv.startAfter = true
		sv.setState(StateStopping)
	case sv.startCancel != nil:
		// A start is under way (the child exited during the drain and is
		// being restarted): restart once it is ready, in case it spawned the
		// old spec.
		sv.rl.restartWhenReady = true
	default:
		if sv.state == StateStopped && !sv.explicitStop && sv.demand() {
			sv.beginStart()
		}
	}
}

// configuredProtocol is the spec's protocol; safe from any goroutine.
func (sv *server) configuredProtocol() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.spec.Protocol
}
