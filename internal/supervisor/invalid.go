package supervisor

import "go.uber.org/zap"

// This file keeps a server whose config cannot be used (Spec.Invalid) in
// StateFailed, with the config's reason, while the others run. A reload
// that makes the config invalid stops the child once its calls in flight
// have finished (as for any identity change); one that makes it valid again
// starts the server per its policy (reconfigure, reload.go).

// startInitially is the first step of the loop: fail an invalid server,
// start an autostart one.
func (sv *server) startInitially() {
	if sv.spec.Invalid != "" {
		sv.failInvalid()
		return
	}
	if sv.state == StateFailed {
		// Invalid when created (newServer), fixed by an Apply before Run.
		sv.failErr = nil
		sv.update(func(st *snapshot) { st.lastError = "" })
		sv.setState(StateStopped)
	}
	if sv.spec.Autostart && !sv.spec.Disabled {
		sv.beginStart()
	}
}

// failInvalid puts the server in StateFailed for its config (loop only),
// answering whoever waits for it with the reason.
func (sv *server) failInvalid() {
	err := configError(sv.spec)
	sv.stopTimer()
	sv.startAfter = false
	sv.rl.restartWhenReady = false
	if sv.state != StateFailed || sv.failErr == nil || sv.failErr.Error() != err.Error() {
		sv.log.Error("server config invalid; not starting it", zap.String("problem", sv.spec.Invalid))
		sv.emit(EventFailed, 0, "", err.Error())
	}
	sv.failErr = err
	sv.update(func(st *snapshot) { st.lastError = err.Error() })
	sv.setState(StateFailed)
	ferr := sv.failedError(err)
	sv.replyAll(&sv.waiters, reply{err: ferr})
	sv.replyAll(&sv.startWaiters, reply{err: ferr})
}

// reconfigureInvalid applies a spec that cannot be used (loop only): a
// running child is stopped once its calls in flight have finished, a start
// under way is cancelled, and the server ends failed.
func (sv *server) reconfigureInvalid() {
	switch {
	case sv.cur != nil:
		// restartForReload after the drain stops the child; the start it
		// then asks for fails the server (beginStart).
		sv.startDrain(cmdReconfigure)
	case sv.startCancel != nil:
		sv.startAfter = true // onStartResult: the start fails the server
		sv.startCancel(serverUnavailable(sv.spec.Name, ": its config became invalid"))
	case sv.rl.drainedC != nil:
		// A restart waits for the drain; it fails the server.
	default:
		sv.failInvalid()
	}
}
