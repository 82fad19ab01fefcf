package service

import (
	"encoding/json"
	"time"
)

// Watch is what a subscription watches: the servers (none: every server
// the call's profile serves) and the kinds of events asked for. At least
// one kind or a URI is required; URIs need at least one server.
type Watch struct {
	Servers              []string
	ToolsListChanged     bool
	PromptsListChanged   bool
	ResourcesListChanged bool
	// URIs are resources whose updates are watched.
	URIs       []string
	State      bool
	Logs       bool
	TaskStatus bool
	// Client names the app; empty: the app's connection's.
	Client Client
}

// SubscriptionKind tells what a SubscriptionEvent carries.
type SubscriptionKind uint8

// Kinds of subscription events.
const (
	// Ack is a subscription's first event: its Ack.
	Ack SubscriptionKind = iota + 1
	ToolsListChanged
	PromptsListChanged
	ResourcesListChanged
	// ResourceUpdated: URI changed; Params are the notification's.
	ResourceUpdated
	// ServerState: the server's State (Pid, Exit and Error with it).
	ServerState
	// LogMessage: Params are a notifications/message's.
	LogMessage
	// LogsLagged: DroppedLogMessages log messages were dropped.
	LogsLagged
	// TaskStatus: Params are a notifications/tasks/status's.
	TaskStatus
	// Restarted: the server restarted; what was watched may have changed.
	Restarted
	// Lagged: the subscriber read too slowly; the subscription ends.
	Lagged
	// Failed: the subscription failed (Error); it ends.
	Failed
)

// SubscriptionEvent is one event of a subscription.
type SubscriptionEvent struct {
	Kind   SubscriptionKind
	Server string
	URI    string
	// Params are the notification's params, a JSON object; the event's
	// receiver may keep them but not write them.
	Params json.RawMessage
	State  string
	Pid    int
	Exit   string
	Error  string
	// Synthetic: mcpd made the event (a list that may have changed while
	// the server was away), not the server.
	Synthetic bool
	// DuringCalls: a log message the server sent while calls were in
	// flight.
	DuringCalls        bool
	Time               time.Time
	DroppedLogMessages uint64
	// Ack is the acknowledgement, in an Ack event.
	Ack *SubscriptionAck
}

// SubscriptionAck acknowledges a subscription: its id, and what each
// server watched.
type SubscriptionAck struct {
	ID      uint64
	Servers []ServerAck
}

// ServerAck is what a subscription watches on one server, or why it
// watches nothing there (Error).
type ServerAck struct {
	Server string
	// Era names the server's current run.
	Era                  string
	ToolsListChanged     bool
	PromptsListChanged   bool
	ResourcesListChanged bool
	URIs                 []string
	Logs                 bool
	State                bool
	Error                string
}

// SubscriptionUpdate adds resource URIs to an open subscription and
// removes others.
type SubscriptionUpdate struct {
	ID     uint64
	Add    []string
	Remove []string
}
