package httpface

import (
	"context"
	"errors"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// DefaultAppName is how an HTTP connection is listed in status until its
// host's calls name it.
const DefaultAppName = "HTTP client"

// errStopped is the NotRunning error once the backend was closed.
var errStopped = errors.New("mcpd is stopping")

// Backend is a bridge.Backend over the daemon's own core.Service: calls run
// the Server's handlers directly, with the request memory budget and call
// tracking of the gRPC path (core.App). Each call belongs to the app
// of its HTTP connection (its peer, the bridge's caller in its context:
// appFromContext), else to one app of the backend's own. Calls run on
// their callers' goroutines; Close cancels them and waits.
type Backend struct {
	srv  *core.Service
	life context.Context // cancelled by Close: ends every call
	stop context.CancelFunc
	wg   sync.WaitGroup // calls in flight

	// makeFallback makes the fallback app once, on the first call that
	// belongs to no connection; only those calls wait on it.
	makeFallback sync.Once

	mu       sync.Mutex // guards fallback and closed; taken alone
	fallback *core.App
	closed   bool // Close ran: a fallback made afterwards is closed at once
}

var (
	_ bridge.Backend        = (*Backend)(nil)
	_ bridge.SessionCallers = (*Backend)(nil)
)

// NewBackend returns a backend calling srv.
func NewBackend(srv *core.Service) *Backend {
	life, stop := context.WithCancel(context.Background())
	return &Backend{srv: srv, life: life, stop: stop}
}

// Close ends every call in flight, waits for them and removes the
// backend's own app from status. Calls after Close fail as "not running".
func (b *Backend) Close() {
	b.stop()
	b.wg.Wait()
	b.mu.Lock()
	b.closed = true
	fallback := b.fallback
	b.mu.Unlock()
	if fallback != nil { // outside b.mu: Close calls into core.Service
		fallback.Close()
	}
}

// app is the app a call of ctx belongs to.
func (b *Backend) app(ctx context.Context) *core.App {
	if a := appFromContext(ctx); a != nil {
		return a
	}
	b.makeFallback.Do(func() {
		a := b.srv.NewLocalApp(core.TransportHTTP, DefaultAppName, -1, 0) // outside b.mu: it calls into core.Service
		b.mu.Lock()
		b.fallback = a
		closed := b.closed
		b.mu.Unlock()
		if closed {
			a.Close()
		}
	})
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.fallback
}

// NewCaller makes a legacy HTTP session an app of its own, of the peer of
// the connection whose request (ctx's) started it: its calls, its Host
// stream and its children's requests then belong to it, not to whichever
// connection each request came on, and status lists it by the name its
// host gives. Its identity for servers shared per client is the host's
// name and the session (core.App.Identify).
func (b *Backend) NewCaller(ctx context.Context, host string) (any, func()) {
	uid, pid := -1, 0
	if p, _ := ctx.Value(peerKey{}).(*connPeer); p != nil {
		uid, pid = p.uid, p.pid
	}
	a := b.srv.NewLocalApp(core.TransportHTTP, DefaultAppName, uid, pid)
	a.Identify(host, true)
	return a, a.Close
}

// withProfile carries the profile of a bridge's call (bridge.WithProfile)
// to the Server, which enforces it, and its workspace root
// (bridge.WithRoot), which picks the instance of a server shared per root.
func withProfile(ctx context.Context) context.Context {
	if p := bridge.ProfileFrom(ctx); p != "" {
		ctx = core.WithProfile(ctx, p)
	}
	if r := bridge.RootFrom(ctx); r != "" {
		ctx = core.WithRoot(ctx, r)
	}
	return ctx
}

// ListServers lists the configured servers, those of the call's profile,
// as a call of ctx's app through the service's in-process API
// (core.App.ListServers).
func (b *Backend) ListServers(ctx context.Context) (*service.Servers, error) {
	return direct(b, ctx, func(ctx context.Context, a *core.App) (*service.Servers, error) {
		return a.ListServers(ctx)
	})
}

// List lists method of server ("" for every server) as a call of ctx's
// app through the service's in-process API (core.App.List).
func (b *Backend) List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
	return direct(b, ctx, func(ctx context.Context, a *core.App) ([]service.ServerList, error) {
		return a.List(ctx, server, method, o)
	})
}

// Read reads a resource as a call of ctx's app through the service's
// in-process API (core.App.Read).
func (b *Backend) Read(ctx context.Context, r service.Read) (*service.Response, error) {
	return direct(b, ctx, func(ctx context.Context, a *core.App) (*service.Response, error) {
		return a.Read(ctx, r)
	})
}

// ServeHost registers ctx's app as a host through the service's in-process
// API (core.App.ServeHost), on the caller's goroutine, until ctx ends
// or Close.
func (b *Backend) ServeHost(ctx context.Context, reg service.HostRegistration, registered func(), answer service.HostAnswerer, notify service.HostNotifier) error {
	_, err := direct(b, ctx, func(ctx context.Context, a *core.App) (struct{}, error) {
		return struct{}{}, a.ServeHost(ctx, reg, registered, answer, notify)
	})
	return err
}

// Send sends req as a call of ctx's app through the service's in-process
// API (core.App.SendRequest), on the caller's goroutine: no stream and
// no gRPC message. Close cancels it.
func (b *Backend) Send(ctx context.Context, req service.Request, onEvent func(service.Event)) (*service.Response, error) {
	return direct(b, ctx, func(ctx context.Context, a *core.App) (*service.Response, error) {
		return a.SendRequest(ctx, req, onEvent)
	})
}

// direct runs call, a call of ctx's app through the service's in-process
// API, on the caller's goroutine, under the bridge's profile and root and
// charging what its caller holds besides the request (bridge.AlsoHeld);
// Close cancels it and waits for it. Its error is the service's
// (service.Error): a cancellation by the caller is of code Canceled or
// DeadlineExceeded.
func direct[T any](b *Backend, ctx context.Context, call func(context.Context, *core.App) (T, error)) (T, error) {
	var zero T
	if b.life.Err() != nil {
		return zero, b.NotRunning()
	}
	b.wg.Add(1) // Close waits for the call
	defer b.wg.Done()
	a := b.app(ctx)
	hctx, cancel := context.WithCancel(core.WithAlsoHeld(withProfile(ctx), bridge.AlsoHeld(ctx)))
	defer cancel()
	defer context.AfterFunc(b.life, cancel)()
	out, err := call(hctx, a)
	switch {
	case err == nil:
		return out, nil
	case ctx.Err() != nil: // the caller's own cancellation: Canceled or DeadlineExceeded
		return zero, service.ErrorOf(ctx.Err())
	}
	return zero, err
}

// UpdateWatch updates a subscription of ctx's app through the service's
// in-process API (core.App.UpdateSubscription), on the caller's
// goroutine.
func (b *Backend) UpdateWatch(ctx context.Context, u service.SubscriptionUpdate) ([]service.ServerAck, error) {
	return direct(b, ctx, func(ctx context.Context, a *core.App) ([]service.ServerAck, error) {
		return a.UpdateSubscription(ctx, u)
	})
}

// Watch serves a subscription of ctx's app through the service's
// in-process API (core.App.Subscribe), on the caller's goroutine: the
// bridge subscribes with it, and mcpd's dashboard watches the servers'
// state. Events are passed
// to send as Subscribe says, until ctx ends (nil), send fails or Close.
func (b *Backend) Watch(ctx context.Context, w service.Watch, send func(service.SubscriptionEvent) error) error {
	_, err := direct(b, ctx, func(ctx context.Context, a *core.App) (struct{}, error) {
		return struct{}{}, a.Subscribe(ctx, w, send)
	})
	return err
}

// FollowLogs follows a log as a call of ctx's app through the service's
// in-process API (core.App.FollowLogs), on the caller's goroutine:
// mcpd's dashboard tails a server's stderr with it. opened is called once
// the log is followed; each line is passed to send until ctx ends (nil),
// send fails or Close.
func (b *Backend) FollowLogs(ctx context.Context, f service.LogFollow, opened func(), send func(service.LogLine) error) error {
	_, err := direct(b, ctx, func(ctx context.Context, a *core.App) (struct{}, error) {
		return struct{}{}, a.FollowLogs(ctx, f, opened, send)
	})
	return err
}

// Ready is nil while the daemon runs: there is no connection to wait for.
func (b *Backend) Ready(context.Context) error {
	if b.life.Err() != nil {
		return b.NotRunning()
	}
	return nil
}

// Down reports whether the backend was closed.
func (b *Backend) Down() bool { return b.life.Err() != nil }

// NotRunning is the error of calls once the daemon is stopping.
func (b *Backend) NotRunning() error { return errStopped }
