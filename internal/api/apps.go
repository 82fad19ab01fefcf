package api

import (
	"context"
	"maps"
	"net"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// appConn is one connected app: one gRPC connection on the socket.
type appConn struct {
	id          uint64
	uid         int // the peer's, -1 when unknown
	pid         int
	connectedAt time.Time
	open        func() bool // false once gRPC closed the connection
	transport   string      // TransportGRPC, or another for a LocalApp

	mu      sync.Mutex // guards following
	name    string
	version string
	profile string              // of the app's last call under a profile
	used    map[string]struct{} // the servers it has used (sharing.go); nil: none
	host    bool                // it registered as a host (Host)
	// identity is the app's identity for shared servers once it is fixed
	// (identityOf): by its door (LocalApp.Identify), else by its first
	// call that needed one. "" until then.
	identity string
	// fixed: the door fixed identity (Identify); no call changes it.
	fixed bool
	// session: the app is one HTTP session, its identity names the
	// session rather than the process (Identify).
	session bool
}

// use records that the app used server: listed, called, read or
// subscribed to.
func (c *appConn) use(server string) {
	c.mu.Lock()
	if _, ok := c.used[server]; !ok {
		if c.used == nil {
			c.used = map[string]struct{}{}
		}
		c.used[server] = struct{}{}
	}
	c.mu.Unlock()
}

// setHost records that the app registered as a host.
func (c *appConn) setHost() {
	c.mu.Lock()
	c.host = true
	c.mu.Unlock()
}

// setProfile records the profile of the app's last call made under one.
func (c *appConn) setProfile(name string) {
	c.mu.Lock()
	c.profile = name
	c.mu.Unlock()
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
	Transport   string
	Profile     string
	// Used are the servers it has used, sorted.
	Used []string
	// Host reports whether it is an MCP host: on mcpd's HTTP face, through
	// mcpdctl bridge, or registered with Host.
	Host bool
}

// App is one connected app as mcpd's own pages show it (Server.Apps).
type App struct {
	Name, Version string
	// Pid is the app's process id; 0 when unknown.
	Pid         int
	ConnectedAt time.Time
	// Transport is the door it came in by: TransportGRPC, TransportHTTP,
	// TransportRelay or TransportDashboard.
	Transport string
	// Profile is the profile of its last call under one; "" for none.
	Profile string
	// Used are the servers it has used (listed, called, read, subscribed
	// to), sorted.
	Used []string
	// Host reports whether it is an MCP host.
	Host bool
}

// Apps returns the connected apps, oldest connection first, with the
// servers each has used, which GetStatus does not report.
func (s *Server) Apps() []App {
	snap := s.apps.snapshot()
	out := make([]App, len(snap))
	for i, a := range snap {
		out[i] = App(a)
	}
	return out
}

// appTracker keeps the set of open connections with the peer pid from the
// handshake. It learns of a connection in the credentials handshake
// (trackCredentials) and of its end when gRPC has closed it, without a
// grpc stats.Handler: with one installed, gRPC builds stats events and
// copies the metadata for every RPC, which is most of what an idle app
// tracker would cost on the call path. Its methods are safe for concurrent
// use.
type appTracker struct {
	now    func() time.Time
	nextID atomic.Uint64

	mu    sync.Mutex // guards conns and pruneAt
	conns map[uint64]*appConn
	// pruneAt is the size of conns at which add next forgets the ended
	// connections (twice what was left after the last time, so that a
	// connect costs O(1) amortized, not a look at every other app).
	pruneAt int
}

// minPruneAt is the smallest pruneAt.
const minPruneAt = 64

func newAppTracker() *appTracker {
	return &appTracker{now: time.Now, conns: make(map[uint64]*appConn)}
}

// trackCredentials wraps the server credentials (PeerCredentials) so that
// every accepted connection is registered; RPCs find their appConn with
// connFromContext, through the peer's AuthInfo.
func (t *appTracker) trackCredentials(inner credentials.TransportCredentials) credentials.TransportCredentials {
	return &trackingCreds{TransportCredentials: inner, t: t}
}

// trackingCreds registers connections as their handshake succeeds.
type trackingCreds struct {
	credentials.TransportCredentials
	t *appTracker
}

// ServerHandshake runs the inner handshake and registers the connection.
// A connection of a kind whose closing cannot be seen from its file
// descriptor is wrapped to see its Close; a Unix socket is returned as a
// rawConn, read and written with raw system calls and still read by gRPC
// with its pooled, readiness-based reader.
func (c *trackingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, ai, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return conn, ai, err
	}
	a, ok := ai.(AuthInfo)
	if !ok {
		return conn, ai, nil
	}
	app := &appConn{id: c.t.nextID.Add(1), uid: a.UID, pid: a.PID, connectedAt: c.t.now(), transport: TransportGRPC}
	if app.open = fdOpen(conn); app.open == nil {
		wrapped := &closeNotifyConn{Conn: conn}
		app.open = func() bool { return !wrapped.closed.Load() }
		conn = wrapped
	}
	c.t.add(app)
	a.app = app
	return newRawConn(conn), a, nil
}

// Clone implements credentials.TransportCredentials.
func (c *trackingCreds) Clone() credentials.TransportCredentials {
	return &trackingCreds{TransportCredentials: c.TransportCredentials.Clone(), t: c.t}
}

// fdOpen returns a func reporting whether conn's file descriptor is still
// open (gRPC closes it when the connection ends), or nil when conn has no
// descriptor to ask.
func fdOpen(conn net.Conn) func() bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	// Control fails with net.ErrClosed once the descriptor was closed.
	return func() bool { return raw.Control(func(uintptr) {}) == nil }
}

// closeNotifyConn records that it was closed.
type closeNotifyConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeNotifyConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// add registers a new connection and, now and then, forgets the ones that
// have ended, so that the set stays within about twice the open
// connections even when nobody asks for a snapshot.
func (t *appTracker) add(c *appConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.conns) >= t.pruneAt {
		t.pruneLocked()
		t.pruneAt = max(2*len(t.conns), minPruneAt)
	}
	t.conns[c.id] = c
}

// pruneLocked forgets the connections that have ended.
func (t *appTracker) pruneLocked() {
	for id, c := range t.conns {
		if !c.open() {
			delete(t.conns, id)
		}
	}
}

// snapshot returns the connected apps, oldest connection first.
func (t *appTracker) snapshot() []appStatus {
	t.mu.Lock()
	t.pruneLocked()
	conns := make([]*appConn, 0, len(t.conns))
	for _, c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	out := make([]appStatus, 0, len(conns))
	for _, c := range conns {
		c.mu.Lock()
		out = append(out, appStatus{Name: c.name, Version: c.version, Pid: c.pid, ConnectedAt: c.connectedAt, Transport: c.transport, Profile: c.profile,
			Used: slices.Sorted(maps.Keys(c.used)), Host: c.host || c.transport == TransportHTTP || c.transport == TransportRelay})
		c.mu.Unlock()
	}
	return out
}

// identifyFromMetadata records the identity an app sent in its request
// metadata (mcpdv1.MetadataClientName/mcpdv1.MetadataClientVersion) on the connection the
// RPC arrived on, so that an app that only asks for status (mcpdctl status)
// is listed by name too.
func identifyFromMetadata(ctx context.Context) {
	if c := connFromContext(ctx); c != nil {
		c.setClient(clientIdentity(ctx, nil))
	}
}

// clientIdentity returns the app's name and version: info's when it names
// the app, else those of the call's metadata (mcpdv1.MetadataClientName,
// mcpdv1.MetadataClientVersion). ValueFromIncomingContext reads the two keys
// without copying the whole metadata map, as FromIncomingContext does.
func clientIdentity(ctx context.Context, info *mcpdv1.ClientInfo) (name, version string) {
	return clientIdentityOf(ctx, info.GetName(), info.GetVersion())
}

// clientIdentityOf is clientIdentity for a call that names itself name
// and version ("" for none).
func clientIdentityOf(ctx context.Context, name, version string) (string, string) {
	if name != "" {
		return name, version
	}
	if name = first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataClientName)); name == "" {
		return "", ""
	}
	return name, first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataClientVersion))
}

// connFromContext returns the app a call comes from: an in-process app's
// (LocalApp.Context), else the connection a gRPC call arrived on; nil for
// neither.
func connFromContext(ctx context.Context) *appConn {
	if c, ok := ctx.Value(appKey{}).(*appConn); ok {
		return c
	}
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	a, _ := p.AuthInfo.(AuthInfo)
	return a.app
}
