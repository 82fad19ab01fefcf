package api

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/stats"
)

// appConn is one connected app: one gRPC connection on the socket.
type appConn struct {
	id          uint64
	pid         int
	connectedAt time.Time

	mu      sync.Mutex // guards following
	name    string
	version string
}

// setClient records the app's self-reported identity, learned from a call.
func (c *appConn) setClient(name, version string) {
	if name == "" {
		return
	}
	c.mu.Lock()
	c.name, c.version = name, version
	c.mu.Unlock()
}

// appStatus is a snapshot of one connected app.
type appStatus struct {
	Name        string
	Version     string
	Pid         int
	ConnectedAt time.Time
}

type appConnKey struct{}

// appTracker is a stats.Handler that keeps the set of open connections with
// the peer pid from the handshake. Its methods are safe for concurrent use.
type appTracker struct {
	now    func() time.Time
	nextID atomic.Uint64

	mu    sync.Mutex // guards conns
	conns map[uint64]*appConn
}

var _ stats.Handler = (*appTracker)(nil)

func newAppTracker() *appTracker {
	return &appTracker{now: time.Now, conns: make(map[uint64]*appConn)}
}

// TagConn registers a connection; the RPCs on it run under the returned
// context, so handlers find their appConn with connFromContext.
func (t *appTracker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	c := &appConn{id: t.nextID.Add(1), pid: -1, connectedAt: t.now()}
	if p, ok := peer.FromContext(ctx); ok {
		if ai, ok := p.AuthInfo.(AuthInfo); ok {
			c.pid = ai.PID
		}
	}
	return context.WithValue(ctx, appConnKey{}, c)
}

// HandleConn adds the connection at ConnBegin and removes it at ConnEnd.
func (t *appTracker) HandleConn(ctx context.Context, s stats.ConnStats) {
	c, ok := ctx.Value(appConnKey{}).(*appConn)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	switch s.(type) {
	case *stats.ConnBegin:
		t.conns[c.id] = c
	case *stats.ConnEnd:
		delete(t.conns, c.id)
	}
}

// TagRPC implements stats.Handler.
func (t *appTracker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC implements stats.Handler.
func (t *appTracker) HandleRPC(context.Context, stats.RPCStats) {}

// snapshot returns the connected apps, oldest connection first.
func (t *appTracker) snapshot() []appStatus {
	t.mu.Lock()
	conns := make([]*appConn, 0, len(t.conns))
	for _, c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	out := make([]appStatus, 0, len(conns))
	for _, c := range conns {
		c.mu.Lock()
		out = append(out, appStatus{Name: c.name, Version: c.version, Pid: c.pid, ConnectedAt: c.connectedAt})
		c.mu.Unlock()
	}
	return out
}

// connFromContext returns the connection an RPC arrived on, or nil.
func connFromContext(ctx context.Context) *appConn {
	c, _ := ctx.Value(appConnKey{}).(*appConn)
	return c
}
