// Package subscriptions lets many apps watch what changes on the shared MCP
// servers with one upstream subscription per child process, and fans the
// notifications out to every app through a bounded queue per app stream.
//
// Upstream, per server: a legacy child gets one resources/subscribe per URI
// (reference-counted across every app and stream) and resources/unsubscribe
// when the last one leaves; list_changed needs no opt-in. A modern child gets
// one subscriptions/listen whose filter is the union of what the apps want;
// when the union changes the new listen is opened before the old one is
// cancelled, and notifications delivered on both during the switch are
// passed on once. After the child is restarted every subscription is sent
// again and the apps get a restarted event plus synthetic change events.
// A reload that changes what a profile shows sends the streams opened
// under it synthetic change events too (ProfileListsChanged). A new stream
// that wants only what the upstream subscription already holds is
// acknowledged from it, without a reconcile (upstream.covers).
//
// Downstream, each app stream has a bounded queue (by events and bytes).
// A full queue coalesces entries by identity (server + kind + URI), so a
// slow app loses repeats, never its only notice of something. Log messages
// are never merged: a full queue drops the oldest ones and tells the app
// how many with a logs-lagged event in their place. When neither makes
// room the stream gets a terminal lagged event. Producers never block.
//
// The package knows the supervisor only through the small Source and Child
// interfaces, and imports only the standard library and zap.
package subscriptions

import (
	"encoding/json"
	"sync"
	"time"
)

// Kind is the kind of an Event.
type Kind string

// Event kinds.
const (
	KindToolsListChanged     Kind = "tools_list_changed"
	KindPromptsListChanged   Kind = "prompts_list_changed"
	KindResourcesListChanged Kind = "resources_list_changed"
	// KindResourceUpdated: notifications/resources/updated for URI.
	KindResourceUpdated Kind = "resource_updated"
	// KindState: a lifecycle transition of the server (State names it).
	KindState Kind = "state"
	// KindLog: a notifications/message not tied to a request.
	KindLog Kind = "log"
	// KindLogsLagged: LogsDropped log messages of the server were dropped
	// here, oldest first, because the app read too slowly; the stream goes
	// on.
	KindLogsLagged Kind = "logs_lagged"
	// KindTaskStatus: a notifications/tasks/status (2025-11-25 tasks);
	// Params is the task.
	KindTaskStatus Kind = "task_status"
	// KindRestarted: the server's child was replaced by a new process and
	// every subscription was sent to it again.
	KindRestarted Kind = "restarted"
	// KindLagged is terminal: the app fell too far behind; it must
	// subscribe again and resync.
	KindLagged Kind = "lagged"
	// KindError is terminal: the subscription cannot continue (Error says
	// why and names the server).
	KindError Kind = "error"
)

// Event is one thing an app stream receives.
type Event struct {
	Kind   Kind
	Server string
	// URI is the updated resource (KindResourceUpdated).
	URI string
	// Params is the notification's params object as the child sent it,
	// without mcpd's subscription tag (list changes, resource updates, log
	// messages); nil for synthetic and mcpd's own events.
	Params json.RawMessage
	// State is the lifecycle transition for KindState: started, ready,
	// exited, restarting, crashloop, stopped or failed.
	State string
	Pid   int
	// Exit is how the child exited (KindState exited/stopped).
	Exit string
	// Error is the reason of KindState exited/crashloop/failed and of
	// KindError.
	Error string
	// ShuttingDown marks the KindError that ends every stream when mcpd
	// shuts down.
	ShuttingDown bool
	// LogsDropped is how many log messages a KindLogsLagged event stands
	// for.
	LogsDropped uint64
	// Synthetic marks change events mcpd made up: after a restart (the
	// lists may have changed while the child was down), or after a reload
	// changed what a profile shows (ProfileListsChanged).
	Synthetic bool
	// DuringCalls marks a KindLog the child sent while calls were in
	// flight, none of which it could be given to: it may be of one of them.
	DuringCalls bool
	Time        time.Time
	// Memo is shared by every stream the event is delivered to (nil for an
	// event only one stream gets): the delivering layer keeps its encoding
	// of the event there, so that a hundred streams encode it once.
	Memo *Memo
	// inst is the instance of Server whose child the event is of ("" for
	// a server that runs one child, instances.go).
	inst string
	// profile, when set, is the only profile whose streams the event
	// reaches, whatever their instance: a reload changed what that
	// profile shows of the server (ProfileListsChanged).
	profile string
}

// Memo holds one value computed once for an event and shared by every
// stream that delivers it.
type Memo struct {
	once sync.Once
	v    any
}

// Get returns the memo's value, computing it with f the first time.
func (m *Memo) Get(f func() any) any {
	m.once.Do(func() { m.v = f() })
	return m.v
}

// terminal reports whether ev ends its stream.
func (ev *Event) terminal() bool { return ev.Kind == KindLagged || ev.Kind == KindError }

// size estimates the memory an event holds in a queue.
func (ev *Event) size() int {
	return 96 + len(ev.Server) + len(ev.URI) + len(ev.Params) + len(ev.State) + len(ev.Exit) + len(ev.Error)
}

// Watch is what one app stream asks for.
type Watch struct {
	// Servers names the servers watched; empty means every configured server.
	Servers              []string
	ToolsListChanged     bool
	PromptsListChanged   bool
	ResourcesListChanged bool
	// URIs are resource URIs watched on every named server that
	// AllowURI allows them on.
	URIs []string
	// AllowURI, when set, says whether uri may be watched on server (a
	// profile hides some resources); it applies to Update's URIs too.
	AllowURI func(server, uri string) bool
	// State asks for the servers' lifecycle events.
	State bool
	// Logs asks for log messages not tied to a request.
	Logs bool
	// TaskStatus asks for every task status notification of the servers.
	TaskStatus bool
}

// ServerAck is what one server agreed to deliver to a stream: for a modern
// child, what its listen acknowledgement honoured; for a legacy child, what
// its capabilities promise (and which resources/subscribe succeeded).
type ServerAck struct {
	Server string
	// Era is "modern" or "legacy"; empty when the server is not running.
	Era                  string
	ToolsListChanged     bool
	PromptsListChanged   bool
	ResourcesListChanged bool
	// URIs are the requested resource URIs the server accepted, sorted.
	URIs []string
	// Logs: the server may send log messages not tied to a request.
	Logs bool
	// State: mcpd's lifecycle events (always delivered).
	State bool
	// Error says why the server could not take the subscription now
	// (crash loop, failed, stopped); the stream stays open and the
	// subscription is set up when the server runs again.
	Error string
}
