package core

import (
	"context"
	"slices"
	"sync/atomic"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// Transports an app reaches mcpd by, as GetStatus reports them.
const (
	TransportGRPC = "grpc"
	TransportHTTP = "http"
	// TransportRelay is an "mcpdctl bridge" on mcpd's bridge socket, whose
	// bridge runs inside mcpd (internal/bridgeface).
	TransportRelay = "relay"
	// TransportDashboard is mcpd's own dashboard page (internal/dashboard):
	// an operator's tool calls, not a host's; the sharing figure leaves it
	// out.
	TransportDashboard = "dashboard"
)

// App is one app connected to the service: a connection of the gRPC
// socket (NewSocketApp), or one of an in-process door (NewLocalApp): a
// connection or session of an MCP host on mcpd's HTTP face, an "mcpdctl
// bridge" on mcpd's bridge socket, the dashboard. Its calls through its
// methods get the request memory budget and the tracking of calls in
// flight that routes its servers' requests to it as host, as the gRPC
// door's interceptors give a socket connection's calls; the status lists
// it until it ends. Its methods are safe for concurrent use.
type App struct {
	s         *Service
	conn      *appConn
	connected func() bool // a socket app's connection is open; nil for an in-process one
	closed    atomic.Bool
}

// appKey is the context key of the app a call comes from (Context).
type appKey struct{}

// NewLocalApp registers an app of the given transport whose process is pid
// (0 when unknown) and whose peer runs as uid; name is shown until its
// calls name it. It is connected until Close.
func (s *Service) NewLocalApp(transport, name string, uid, pid int) *App {
	a := &App{s: s}
	a.conn = s.connect(transport, name, uid, pid, a.open)
	return a
}

// NewSocketApp registers one connection of the gRPC socket (TransportGRPC)
// of a peer running as uid, process pid: connected as long as open
// reports true. The gRPC door puts it in the context of each of the
// connection's calls (Context).
func (s *Service) NewSocketApp(uid, pid int, open func() bool) *App {
	a := &App{s: s, connected: open}
	a.conn = s.connect(TransportGRPC, "", uid, pid, a.open)
	return a
}

// open reports whether the app is still connected: not closed, and, for
// a socket's, its connection open.
func (a *App) open() bool {
	return !a.closed.Load() && (a.connected == nil || a.connected())
}

// connect registers a connected app.
func (s *Service) connect(transport, name string, uid, pid int, open func() bool) *appConn {
	c := &appConn{
		id:          s.apps.nextID.Add(1),
		uid:         uid,
		pid:         pid,
		connectedAt: s.apps.now(),
		transport:   transport,
		open:        open,
		name:        name,
	}
	s.apps.add(c)
	return c
}

// Identify fixes the app's identity for shared servers (instances.go)
// before its first call: host is its host's own name (its clientInfo
// name; "" when unknown), and session says that the app is one HTTP
// session, told apart from others of the same host by the session rather
// than by its process. Every call of the app then reaches the same
// instance of a "client" server, whatever its request says.
func (a *App) Identify(host string, session bool) { a.conn.identify(host, session) }

// Close ends the app: the status no longer lists it. A socket app also
// ends with its connection.
func (a *App) Close() { a.closed.Store(true) }

// Context returns ctx carrying the app, for the Service's operations:
// what a call of the app does is counted, scoped and tracked as the app's.
func (a *App) Context(ctx context.Context) context.Context {
	return context.WithValue(ctx, appKey{}, a.conn)
}

// SendRequest sends r to its server as a call of the app, as the gRPC
// SendRequest does: charged to the request memory budget (with ctx's
// WithAlsoHeld), tracked as the app's call in flight on r.Server, then
// validated and checked against the call's profile (WithProfile) by the
// same code. The call's progress notifications and log messages are passed
// to onEvent (nil: dropped) in order, never concurrently, before it
// returns; the response is returned, a server's JSON-RPC error in it. The
// error is the call's, a service.Error.
func (a *App) SendRequest(ctx context.Context, r service.Request, onEvent func(service.Event)) (*service.Response, error) {
	// The scope takes no client name, as for a gRPC stream (api.trackStream).
	ctx, end, err := a.enter(ctx, requestSize(r), r.Server, "")
	if err != nil {
		return nil, ToError(err)
	}
	defer end()
	ans, err := a.s.SendRequest(ctx, r, func(ev service.Event) error {
		if onEvent != nil {
			onEvent(ev)
		}
		return nil
	})
	if err != nil {
		return nil, ToError(err)
	}
	return ans.toService(r.Server), nil
}

// enter is what a call of a server goes through before the service runs
// it, as a gRPC call does in the interceptors, through the same
// functions: admitted (charged n bytes to the request memory budget, in
// the instance scope of the app and of clientName) and tracked as the
// app's call in flight on server. end ends both.
func (a *App) enter(ctx context.Context, n int64, server, clientName string) (_ context.Context, end func(), _ error) {
	ctx, release, err := a.admit(ctx, n, clientName)
	if err != nil {
		return nil, nil, err
	}
	done := a.s.InFlight(ctx, server)
	return ctx, func() { done(); release() }, nil
}

// List lists method (tools/list, prompts/list, resources/list or
// resources/templates/list) of server, or of every enabled server when
// server is "", as a call of the app, as the gRPC List RPCs do: a server's
// JSON-RPC error is in its entry, and so, in a list of every server, is
// why a server could not be asked.
func (a *App) List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
	if !listMethods[method] {
		return nil, codeError(service.InvalidArgument, "method %q is no list", method)
	}
	ctx, end, err := a.enter(ctx, int64(len(server)+len(method))+optionsSize(o), server, o.Client.Name)
	if err != nil {
		return nil, ToError(err)
	}
	defer end()
	return a.s.List(ctx, server, method, o)
}

// listMethods are the methods List serves.
var listMethods = map[string]bool{
	MethodToolsList: true, MethodPromptsList: true, MethodResourcesList: true, MethodResourceTemplatesList: true,
}

// Read reads a resource as a call of the app, as the gRPC ReadResource
// does.
func (a *App) Read(ctx context.Context, r service.Read) (*service.Response, error) {
	n := int64(len(r.Server)+len(r.URI)+len(r.InputResponses)+len(r.RequestState)) + optionsSize(r.Options)
	ctx, end, err := a.enter(ctx, n, r.Server, r.Options.Client.Name)
	if err != nil {
		return nil, ToError(err)
	}
	defer end()
	ans, err := a.s.Read(ctx, r)
	if err != nil {
		return nil, ToError(err)
	}
	return ans.toService(r.Server), nil
}

// ListServers lists the configured servers, those of the call's profile,
// as the gRPC ListServers does.
func (a *App) ListServers(ctx context.Context) (*service.Servers, error) {
	ctx, release, err := a.admit(ctx, 0, "")
	if err != nil {
		return nil, err
	}
	defer release()
	return a.s.ListServers(ctx)
}

// requestSize is what r holds, as the budget charges it: about the size
// of the gRPC message that would carry it.
func requestSize(r service.Request) int64 {
	return int64(len(r.Server)+len(r.Method)+len(r.Params)) + optionsSize(r.Options)
}

// optionsSize is what o holds.
func optionsSize(o service.Options) int64 {
	return int64(len(o.ClientCapabilities) + len(o.Client.Name) + len(o.Client.Version))
}

// toService is a's response to a call of server.
func (a Answer) toService(server string) *service.Response {
	if a.Hidden != nil {
		return &service.Response{Server: server, Error: rpcErrorOf(a.Hidden)}
	}
	out := &service.Response{Server: server, Cache: a.Source, Duration: a.Duration}
	if a.Response.Error != nil {
		out.Error = rpcErrorOf(a.Response.Error)
		return out
	}
	out.Result = a.Response.Result
	return out
}

// rpcErrorOf is a server's JSON-RPC error.
func rpcErrorOf(e *session.RPCError) *jsonrpc.Error {
	return &jsonrpc.Error{Code: e.Code, Message: e.Message, Data: e.Data}
}

// serviceSource is src as the service names it.
func serviceSource(src cache.Source) service.Source {
	switch src {
	case cache.SourceHit:
		return service.Hit
	case cache.SourceCoalesced:
		return service.Coalesced
	}
	return service.Fetched
}

// Subscribe serves a subscription of the app to what w watches, as the
// gRPC Subscribe does (a long-lived call: not charged to the budget),
// passing the acknowledgement (an Ack event), then each event, to send
// until ctx ends (nil), send fails (nil), the subscription lags (a Lagged
// event, then nil) or fails (a Failed event, then the error). Events are
// passed in order, never concurrently.
func (a *App) Subscribe(ctx context.Context, w service.Watch, send func(service.SubscriptionEvent) error) error {
	ctx = a.s.WithScope(a.Context(ctx), "")
	return ToError(a.s.Subscribe(ctx, w, send,
		func(ev *subscriptions.Event) error { return send(EventToService(ev)) }))
}

// UpdateSubscription adds resource URIs to an open subscription of the
// app and removes others, as the gRPC UpdateSubscription does, returning
// what each server now watches.
func (a *App) UpdateSubscription(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error) {
	n := int64(8)
	for _, u := range slices.Concat(u.Add, u.Remove) {
		n += int64(len(u))
	}
	ctx, release, err := a.admit(ctx, n, "")
	if err != nil {
		return nil, ToError(err)
	}
	defer release()
	acks, err := a.s.UpdateSubscription(ctx, u)
	return acks, ToError(err)
}

// FollowLogs follows a log for the app, as the gRPC FollowLogs does:
// opened (nil: none) is called once the log is followed, then each line
// is passed to send until ctx ends or send fails (nil), or the server is
// removed from the config (its error).
func (a *App) FollowLogs(ctx context.Context, f service.LogFollow, opened func(), send func(service.LogLine) error) error {
	return ToError(a.s.FollowLogs(a.s.WithScope(a.Context(ctx), ""), f, opened, send))
}
