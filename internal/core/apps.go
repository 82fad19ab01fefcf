package core

import (
	"context"
	"maps"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// appConn is one connected app: one connection on the gRPC socket, or
// one connection or session of an in-process door (App).
type appConn struct {
	id          uint64
	uid         int // the peer's, -1 when unknown
	pid         int
	connectedAt time.Time
	open        func() bool // false once gRPC closed the connection
	transport   string      // TransportGRPC, or another for a App

	mu      sync.Mutex // guards following
	name    string
	version string
	profile string              // of the app's last call under a profile
	used    map[string]struct{} // the servers it has used (sharing.go); nil: none
	host    bool                // it registered as a host (Host)
	// identity is the app's identity for shared servers once it is fixed
	// (identityOf): by its door (App.Identify), else by its first
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

// ConnectedApp is one connected app as the status shows it (Service.Status,
// Service.Apps).
type ConnectedApp struct {
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
	// Host reports whether it is an MCP host: on mcpd's HTTP face, through
	// mcpdctl bridge, or registered with Host.
	Host bool
}

// Apps returns the connected apps, oldest connection first, with the
// servers each has used.
func (s *Service) Apps() []ConnectedApp { return s.apps.snapshot() }

// appTracker keeps the set of connected apps: each door registers its
// connections or sessions (NewLocalApp, NewSocketApp), and an app ends
// when its open func says so (the gRPC door: when gRPC closed the
// connection's descriptor). Its methods are safe for concurrent use.
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
func (t *appTracker) snapshot() []ConnectedApp {
	t.mu.Lock()
	t.pruneLocked()
	conns := make([]*appConn, 0, len(t.conns))
	for _, c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	sort.Slice(conns, func(i, j int) bool { return conns[i].id < conns[j].id })
	out := make([]ConnectedApp, 0, len(conns))
	for _, c := range conns {
		c.mu.Lock()
		out = append(out, ConnectedApp{Name: c.name, Version: c.version, Pid: c.pid, ConnectedAt: c.connectedAt, Transport: c.transport, Profile: c.profile,
			Used: slices.Sorted(maps.Keys(c.used)), Host: c.host || c.transport == TransportHTTP || c.transport == TransportRelay})
		c.mu.Unlock()
	}
	return out
}

// IdentifyFromContext records the identity ctx's door names (WithClient)
// on the app the call comes from, so that an app that only asks for
// status (mcpdctl status) is listed by name too.
func IdentifyFromContext(ctx context.Context) {
	if c := connFromContext(ctx); c != nil {
		c.setClient(clientIdentityOf(ctx, "", ""))
	}
}

// clientIdentityOf is the app's name and version: name and version when
// the call names itself, else those its door names (WithClient).
func clientIdentityOf(ctx context.Context, name, version string) (string, string) {
	if name != "" {
		return name, version
	}
	c := clientOf(ctx)
	return c.Name, c.Version
}

// connFromContext returns the app a call comes from (App.Context); nil
// for none.
func connFromContext(ctx context.Context) *appConn {
	c, _ := ctx.Value(appKey{}).(*appConn)
	return c
}
