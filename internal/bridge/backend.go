package bridge

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// Backend is what the bridge needs from mcpd, in the in-process service's
// plain values: the calls it forwards to, and the state of its connection.
// mcpd's own backend (internal/httpface) serves them in process, on the
// caller's goroutine; internal/bridgegrpc is mcpd over its gRPC socket.
// Errors are the calls' own, which Error and Reason read.
type Backend interface {
	// ListServers lists the configured servers, those of the call's
	// profile (WithProfile), and that profile.
	ListServers(ctx context.Context) (*service.Servers, error)
	// Send is SendRequest: the call's progress notifications and log
	// messages are passed to onEvent as they come, in order, never
	// concurrently, before it returns the response (a server's JSON-RPC
	// error in it; nil if mcpd ended the call without one).
	Send(ctx context.Context, req service.Request, onEvent func(service.Event)) (*service.Response, error)
	// List is the List RPC of method (tools/list, …) for server, "" for
	// every server.
	List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error)
	// Read is ReadResource.
	Read(ctx context.Context, r service.Read) (*service.Response, error)
	// ServeHost is Host: it registers the bridge as a host and, until ctx
	// ends, answers the servers' requests routed to it with answer, and
	// passes their notifications about those requests to notify.
	// registered is called once the registration is in place.
	ServeHost(ctx context.Context, reg service.HostRegistration, registered func(), answer service.HostAnswerer, notify service.HostNotifier) error
	// Watch is Subscribe: it passes the subscription's acknowledgement (an
	// Ack event), then each event, to send, in order and never
	// concurrently, until ctx ends, send fails or the subscription ends.
	Watch(ctx context.Context, w service.Watch, send func(service.SubscriptionEvent) error) error
	// UpdateWatch is UpdateSubscription.
	UpdateWatch(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error)

	// Ready waits a short while until mcpd can be reached, failing with
	// the "not running" error when it cannot.
	Ready(ctx context.Context) error
	// Down reports whether mcpd is unreachable now.
	Down() bool
	// NotRunning is the error that says mcpd is not there.
	NotRunning() error
}

// backendError turns a failed call of be for server into the error the
// host sees (RPCError).
func backendError(ctx context.Context, be Backend, err error, server string) *jsonrpc.Error {
	return RPCError(ctx, err, server, be.Down, be.NotRunning)
}

// SessionCallers is a Backend that tells the hosts of HTTP sessions apart
// (mcpd's in-process backend): each session is made a caller of its own
// (WithCaller) from the context of the request that starts it, so that its
// calls, its host registration (ServeHost) and its children's requests belong to one app,
// whichever connections its requests come on; host is the name the
// session's host gives in its initialize clientInfo ("" for none), which
// with the session is its identity for servers shared per client. end
// removes that caller.
type SessionCallers interface {
	NewCaller(ctx context.Context, host string) (caller any, end func())
}

// HostCallers is a Backend that tells modern HTTP hosts apart (mcpd's
// in-process backend). A modern host has no session: it is its clientInfo
// name and its peer, which HostPeer gives for the request of ctx ("" when
// unknown; mcpd's face gives the peer's process). NewHostCaller makes the
// caller of the host named host whose request ctx is; gone is closed once
// the host is gone (every connection that carried one of its requests has
// closed), and end removes the caller. Attach counts the connection of a
// further request of the host, reporting false once it was gone.
type HostCallers interface {
	HostPeer(ctx context.Context) string
	NewHostCaller(ctx context.Context, host string) (caller any, gone <-chan struct{}, end func())
	Attach(ctx context.Context, caller any) bool
}
