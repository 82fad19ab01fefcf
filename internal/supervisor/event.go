package supervisor

import "time"

// EventKind names a lifecycle transition of one server.
type EventKind string

// Event kinds, in the order a server usually goes through them.
const (
	// EventStarted: a child process was spawned (handshake not done yet).
	EventStarted EventKind = "started"
	// EventReady: the handshake succeeded; the server serves requests.
	EventReady EventKind = "ready"
	// EventExited: the child exited unexpectedly (or crashed during start).
	EventExited EventKind = "exited"
	// EventRestarting: a restart is scheduled after a backoff delay; after
	// a remote server could not be reached, Error says why.
	EventRestarting EventKind = "restarting"
	// EventCrashLoop: too many unexpected exits; the server is held down
	// until the cooldown passes or an operator starts it.
	EventCrashLoop EventKind = "crashloop"
	// EventStopped: the child was stopped by mcpd (stop, restart, shutdown).
	EventStopped EventKind = "stopped"
	// EventFailed: the server cannot be started (command not found,
	// handshake impossible); it is not restarted automatically.
	EventFailed EventKind = "failed"
)

// Event is one lifecycle transition of a server. Subscriptions use
// EventReady after EventExited/EventRestarting to re-send subscriptions to
// the new process.
type Event struct {
	Server string
	// Instance is the key of the instance of a shared server the event is
	// of; "" for the server itself.
	Instance string
	Kind     EventKind
	// Pid is the child's process id, or 0 if none is concerned.
	Pid int
	// Exit is how the child exited ("exit status 1", "signal: killed") for
	// EventExited and EventStopped; empty otherwise.
	Exit string
	// Error is the failure reason for EventExited, EventCrashLoop,
	// EventFailed and a network failure's EventRestarting; empty otherwise.
	Error string
	Time  time.Time
}
