package supervisor

import (
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/remote"
)

// Network failures are not crashes (design: "Network failures (refused,
// DNS, TLS, timeouts) are not crashes: they back off without a
// crash-loop hold, and a call made while a remote server is in backoff
// tries at once"). A remote server that cannot be reached waits in
// StateBackoff, its backoff growing up to BackoffMax, and is never held
// in StateCrashLoop for it; a server that accepts the connection and then
// fails its handshake or drops it is still bounded by the crash-loop rule.

// netState is the network side of a remote server's restart policy; loop
// only.
type netState struct {
	// err is the last network failure since the server was last ready;
	// nil when the last failure (if any) was not a network one.
	err error
	// fails counts the network failures in a row: the backoff grows with it.
	fails int
	// lost: a ready connection was lost, so mcpd reconnects in the
	// background (a server never reached is tried again by calls).
	lost bool
	// counted is when the failure just before this run of network
	// failures was counted toward the crash-loop bound, and start whether
	// it was a failed start (zero: none).
	counted time.Time
	start   bool
}

// networkFailure reports whether err ended a remote server's connection
// or start on the network (remote.Unreachable).
func (sv *server) networkFailure(err error) bool {
	return sv.currentSpec().Remote != nil && remote.Unreachable(err)
}

// noteCounted records that the failure just counted toward the crash-loop
// bound (at sv.exits' last entry) may be the start of an outage: if a
// network failure follows, it is uncounted (a stream cut by the server's
// end, a request on a connection the server had just dropped).
func (sv *server) noteCounted(start bool) {
	if sv.currentSpec().Remote == nil || len(sv.exits) == 0 {
		return
	}
	sv.net.counted, sv.net.start = sv.exits[len(sv.exits)-1], start
	sv.net.lost = sv.net.lost || !start
}

// uncountOutageStart removes from the crash-loop count the failure noted
// by noteCounted, now that a network failure followed it.
func (sv *server) uncountOutageStart() {
	at := sv.net.counted
	if at.IsZero() {
		return
	}
	sv.net.counted = time.Time{}
	for i := len(sv.exits) - 1; i >= 0; i-- {
		if sv.exits[i].Equal(at) {
			sv.exits = append(sv.exits[:i], sv.exits[i+1:]...)
			break
		}
	}
	if sv.net.start && sv.failedStarts > 0 {
		sv.failedStarts--
	}
}

// afterNetworkFailure backs off after a remote server could not be
// reached (loop only); lost says a ready connection was lost so. The
// calls waiting for the server fail now, saying why and when mcpd tries
// next; a call that arrives during the backoff tries at once (acquire).
func (sv *server) afterNetworkFailure(cause error, lost bool) {
	sv.uncountOutageStart()
	sv.net.err, sv.net.lost = cause, sv.net.lost || lost
	sv.net.fails++
	sv.restartNext = true
	sv.httpPool().Close() // idle connections to the server that went away
	if sv.spec.Restart == RestartNever {
		sv.setState(StateStopped)
		sv.update(func(st *snapshot) { st.lastError = sv.unreachableText(cause) })
		sv.replyAll(&sv.waiters, reply{err: sv.unreachableError(cause, "restart policy is never; the next call tries again")})
		return
	}
	// The first failure waits BackoffMin too: a call meanwhile tries at once.
	d := sv.sup.bo.delay(sv.net.fails + 1)
	sv.log.Info("server unreachable; backing off", zap.Error(cause), zap.Duration("backoff", d), zap.Int("failures", sv.net.fails))
	sv.setState(StateBackoff)
	sv.setTimer(d)
	next := "the next call tries again"
	if sv.reconnects() {
		next = fmt.Sprintf("next attempt in %s or at the next call", d.Round(time.Millisecond))
	}
	text := sv.unreachableText(cause)
	sv.update(func(st *snapshot) { st.lastError = text })
	sv.emit(EventRestarting, 0, "", text)
	sv.replyAll(&sv.waiters, reply{err: sv.unreachableError(cause, next)})
}

// reconnects reports whether a remote server in backoff is tried again
// when its timer fires without a call waiting (loop only): it was serving
// when its connection was lost, or something else wants it.
func (sv *server) reconnects() bool {
	return sv.net.lost || sv.spec.Autostart || sv.spec.Restart == RestartAlways || sv.subsDemand()
}

// netBackoff reports whether the server waits out a network failure
// (loop only).
func (sv *server) netBackoff() bool {
	return sv.state == StateBackoff && sv.net.err != nil
}

// notReady says, for a call that gave up waiting, the server's state and,
// for a remote server trying to reconnect, why it is not connected.
func (sv *server) notReady() string {
	st := sv.status()
	s := "state " + string(st.State)
	if st.URL != "" && st.LastError != "" && (st.State == StateStarting || st.State == StateBackoff) {
		s += "; last error: " + st.LastError
	}
	return s
}

// unreachableText says why a remote server cannot be reached, for status
// and events.
func (sv *server) unreachableText(cause error) string {
	return fmt.Sprintf("server %q is unreachable: %s", sv.spec.Name, causeText(sv.spec.Name, cause))
}

// unreachableError is the error of the calls that waited for a remote
// server that could not be reached: the cause and when mcpd tries next.
// It matches ErrUnavailable and keeps cause in its chain.
func (sv *server) unreachableError(cause error, next string) error {
	return &unavailableError{msg: sv.unreachableText(cause) + "; " + next, cause: cause, causeInMsg: true, server: sv.spec.Name}
}

// causeText is cause's message without the prefixes naming the server
// (the message around it names it once).
func causeText(name string, cause error) string {
	s := cause.Error()
	for _, p := range []string{fmt.Sprintf("start %q: ", name), fmt.Sprintf("connection to server %q lost: ", name)} {
		s = strings.TrimPrefix(s, p)
	}
	return strings.ReplaceAll(s, fmt.Sprintf("server %q: ", name), "")
}
