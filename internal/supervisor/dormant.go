package supervisor

// This file starts a server's loop goroutine only once the server has
// something to do. A configured server that is lazy (no autostart), valid
// and unused has nothing for its loop to do until its first command, so Run
// leaves it dormant: no goroutine, no stack, nothing to schedule. Of 500
// configured servers most are typically never used in a session. The first
// command (a call, start, status-changing RPC, subscription, reload) wakes
// it; what the loop does from then on is unchanged.

// loopState is whether a server's loop goroutine runs.
type loopState int

const (
	// loopDormant: not started; the first command starts it (wake).
	loopDormant loopState = iota
	// loopRunning: started (it may have exited since; rl.gone says so).
	loopRunning
	// loopClosed: never to start (removed, or the supervisor stopped,
	// while dormant); rl.gone is closed.
	loopClosed
)

// needsLoopAtRun reports whether Run must start sv's loop at once: the
// loop's first step (startInitially) has work to do, or a command made
// before Run waits for it. s.mu must be held.
func (sv *server) needsLoopAtRun() bool {
	return sv.loopWanted || sv.spec.Invalid != "" || sv.state == StateFailed || (sv.spec.Autostart && !sv.spec.Disabled)
}

// startLoopLocked starts sv's loop goroutine. s.mu must be held and Run
// running.
func (s *Supervisor) startLoopLocked(sv *server) {
	sv.loop = loopRunning
	sv.loopStarted.Store(true)
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		sv.run(s.quit)
	}()
}

// startLoopIfNeededLocked starts sv's loop if needsLoopAtRun says so, and
// leaves it dormant otherwise (closed, once Run is stopping). s.mu must be
// held and Run running.
func (s *Supervisor) startLoopIfNeededLocked(sv *server) {
	switch {
	case s.loopsClosed:
		sv.closeDormantLocked()
	case sv.needsLoopAtRun():
		s.startLoopLocked(sv)
	}
}

// wake makes sure sv's loop runs before a command is sent to it: it starts
// a dormant loop, or, before Run, asks Run to start it. After Run began to
// stop, or for a server removed while dormant, it does nothing: the send
// then fails on quit or rl.gone.
func (sv *server) wake() {
	if sv.loopStarted.Load() {
		return
	}
	s := sv.sup
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case sv.loop != loopDormant:
	case !s.running:
		sv.loopWanted = true
	case !s.loopsClosed:
		s.startLoopLocked(sv)
	}
}

// closeDormantLocked marks a dormant sv as never to run and closes its
// rl.gone, as its loop would on exit; it reports whether sv was dormant.
// s.mu must be held.
func (sv *server) closeDormantLocked() bool {
	if sv.loop != loopDormant {
		return false
	}
	sv.loop = loopClosed
	close(sv.rl.gone)
	return true
}

// closeLoops stops loops from starting (Run's shutdown) and closes the
// dormant servers, so that whatever waits for their rl.gone returns.
func (s *Supervisor) closeLoops() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.loopsClosed = true
	for _, sv := range s.servers {
		sv.closeDormantLocked()
	}
}

// removeDormantLocked ends a server removed by Apply that never ran (before
// Run, no server has): there is nothing to drain or stop. It reports whether sv was dormant. s.mu
// must be held.
func (sv *server) removeDormantLocked() bool {
	if !sv.closeDormantLocked() {
		return false
	}
	sv.log.Info("server removed from the config")
	return true
}
