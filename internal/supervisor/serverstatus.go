package supervisor

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

func (sv *server) lastError() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.st.lastError
}

func (sv *server) lastExit() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.st.lastExit
}

// failedError is the error of a call to a failed server: what failed
// (cause, which for a start failure or a command that cannot start already
// names the server) and what to do.
func (sv *server) failedError(cause error) error {
	if cause == nil { // not expected: failErr is set with the state
		cause = errors.New(sv.lastError())
	}
	var ce *ConfigError
	if errors.As(cause, &ce) {
		return &unavailableError{msg: cause.Error(), cause: cause, causeInMsg: true, server: sv.spec.Name}
	}
	msg := fmt.Sprintf("server %q failed: %s; fix it, then run: mcpdctl restart %s", sv.spec.Name, cause, sv.spec.Name)
	if errors.Is(cause, transport.ErrCannotStart) || ServerOf(cause) == sv.spec.Name {
		// The cause names the server already.
		msg = fmt.Sprintf("%s; fix it, then run: mcpdctl restart %s", cause, sv.spec.Name)
	}
	return &unavailableError{msg: msg, cause: cause, causeInMsg: true, server: sv.spec.Name}
}

// crashLoopError names the server, the last exit status, what to do and
// the last stderr lines (design: "requests fail fast with UNAVAILABLE naming
// the server, the exit status and the last stderr lines"). Loop only.
func (sv *server) crashLoopError() error {
	sv.mu.Lock()
	last, nextAt := sv.st.lastExit, sv.st.nextAt
	sv.mu.Unlock()
	wait := ""
	if !nextAt.IsZero() {
		wait = fmt.Sprintf(" for %s", max(nextAt.Sub(sv.sup.now()), 0).Round(time.Second))
	}
	switch {
	case last == "" && sv.lastStartErr != nil:
		last = sv.lastStartErr.Error() // it never got as far as running
	case last == "":
		last = "unknown"
	}
	why := fmt.Sprintf("%d exits within %s, last exit: %s", len(sv.exits), sv.sup.opts.CrashLoopWindow, last)
	if sv.spec.Remote != nil {
		why = fmt.Sprintf("%d connections failed or were lost within %s, the last: %s", len(sv.exits), sv.sup.opts.CrashLoopWindow, last)
	}
	if sv.failedStarts >= sv.sup.opts.CrashLoopMax && len(sv.exits) < sv.sup.opts.CrashLoopMax && sv.lastStartErr != nil {
		// Starts that took long (a handshake timing out) ended in a
		// process mcpd stopped: its exit status says nothing.
		why = fmt.Sprintf("%d starts failed in a row, the last: %s", sv.failedStarts, sv.lastStartErr)
	}
	return serverUnavailable(sv.spec.Name, " is crash-looping (%s); held down%s or until: mcpdctl restart %s%s",
		why, wait, sv.spec.Name, stderrTail(sv.ring, 5))
}

// status returns the snapshot as a Status; it takes only sv.mu, briefly.
func (sv *server) status() Status {
	sv.mu.Lock()
	st := sv.st
	spec := sv.spec // reload may change it (reload.go)
	sv.mu.Unlock()
	out := Status{
		Name:               sv.spec.Name,
		State:              st.state,
		Pid:                st.pid,
		StartedAt:          st.startedAt,
		Restarts:           st.restarts,
		LastError:          st.lastError,
		LastExit:           st.lastExit,
		Autostart:          spec.Autostart,
		Disabled:           spec.Disabled,
		ExplicitlyStopped:  st.explicitStop,
		CallsInFlight:      sv.inFlight.Load(),
		CallsTotal:         sv.total.Load(),
		CallsFailed:        sv.failed.Load(),
		Cache:              sv.cache.Stats(),
		ToolChangesPending: sv.pinPending(),
		LinesSkipped:       st.skipped,
		LinesOversize:      st.oversize,
		ResponsesDropped:   st.dropped,
		MessagesInvalid:    st.invalid,
		Command:            strings.Join(append([]string{spec.Command}, spec.Args...), " "),
		Sandbox:            st.sandbox,
		Share:              spec.Share,
		MaxInstances:       spec.MaxInstances,
	}
	if sv.inst != nil {
		out.Instance, out.Root = sv.inst.key, sv.inst.root
	}
	if spec.Remote != nil {
		out.Command = remote.Redact(spec.Remote.URL)
		out.URL = out.Command
	}
	if spec.Invalid != "" && st.state == StateFailed {
		out.ConfigError = spec.Invalid
	}
	if st.state == StateReady {
		out.Era = st.info.Era
		out.ProtocolVersion = st.info.ProtocolVersion
		out.ServerInfo = st.info.ServerInfo
		out.Capabilities = st.info.Capabilities
		out.Instructions = st.info.Instructions
	}
	if st.proc != nil {
		ps := st.proc.Stats()
		out.LinesSkipped += ps.LinesSkipped
		out.LinesOversize += ps.LinesOversize
	}
	if st.sess != nil {
		ss := st.sess.Stats()
		out.ResponsesDropped += ss.ResponsesDropped
		out.MessagesInvalid += ss.MessagesInvalid
	}
	if !st.nextAt.IsZero() {
		out.NextRestartIn = max(st.nextAt.Sub(sv.sup.now()), 0)
	}
	if l := sv.ring.Last(1); len(l) > 0 {
		out.LastStderrLine = l[0].Text
	}
	return out
}

// hungError is the error of calls on a child that stopped reading its
// stdin for its stdinTimeout; the transport killed it.
func (sv *server) hungError(hung error) error {
	if sv.currentSpec().Restart == RestartNever {
		return unavailable(nil, "%s; it was killed (restart policy is never)", hung)
	}
	return unavailable(nil, "%s; restarting it", hung)
}

// describeExit renders a process's exit error ("exit status 1",
// "signal: killed").
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var le *transport.LimitExitError
	if errors.As(err, &le) {
		return le.Reason
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}
