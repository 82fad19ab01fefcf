package bridge

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Backend is what the bridge needs from mcpd: the RPCs it forwards to, and
// the state of its connection. GRPCBackend is mcpd over its socket.
type Backend interface {
	ListServers(ctx context.Context, in *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error)
	ListTools(ctx context.Context, in *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error)
	ListPrompts(ctx context.Context, in *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error)
	ListResources(ctx context.Context, in *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error)
	ListResourceTemplates(ctx context.Context, in *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error)
	ReadResource(ctx context.Context, in *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error)
	UpdateSubscription(ctx context.Context, in *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error)
	SendRequest(ctx context.Context, in *mcpdv1.SendRequestRequest) (RecvStream[mcpdv1.CallToolEvent], error)
	Subscribe(ctx context.Context, in *mcpdv1.SubscribeRequest) (RecvStream[mcpdv1.SubscriptionEvent], error)
	Host(ctx context.Context) (HostStream, error)

	// Ready waits a short while until mcpd can be reached, failing with
	// the "not running" error when it cannot.
	Ready(ctx context.Context) error
	// Down reports whether mcpd is unreachable now.
	Down() bool
	// NotRunning is the error that says mcpd is not there.
	NotRunning() error
	// Error turns a failed RPC for server into the error the host sees.
	Error(ctx context.Context, err error, server string) *jsonrpc.Error
	// Reason is the message of a failed RPC, without its code.
	Reason(err error) string
}

// DirectSender is a Backend that serves requests, lists, reads, host
// registrations and subscription updates in process, on the caller's goroutine (mcpd's own backend): requests and
// answers are plain Go values, with no stream, no goroutine, no channel
// and no gRPC message per call. Errors are the calls', as the RPCs would
// have given them.
type DirectSender interface {
	// Send is SendRequest: the call's progress notifications and log
	// messages are passed to onEvent as they come, in order, never
	// concurrently, before it returns the response (a server's JSON-RPC
	// error in it).
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
	// UpdateWatch is UpdateSubscription.
	UpdateWatch(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error)
}

// SessionCallers is a Backend that tells the hosts of HTTP sessions apart
// (mcpd's in-process backend): each session is made a caller of its own
// (WithCaller) from the context of the request that starts it, so that its
// calls, its Host stream and its children's requests belong to one app,
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

// RecvStream is the receiving side of a server-streaming RPC.
type RecvStream[T any] interface {
	Recv() (*T, error)
}

// HostStream is the bridge's end of the Host RPC.
type HostStream interface {
	Send(*mcpdv1.HostRequest) error
	Recv() (*mcpdv1.HostResponse, error)
}
