package core

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// sharer is the part of the supervisor that says whether any server is
// shared per app or per root; without one no call needs a Scope.
type sharer interface{ Shared() bool }

// WithScope returns ctx carrying the Scope of the app the call came from,
// when a configured server runs instances (supervisor instances.go); info
// is the client name the call's request gives ("" for none).
func (s *Service) WithScope(ctx context.Context, info string) context.Context {
	if sh, ok := s.sup.(sharer); !ok || !sh.Shared() {
		return ctx
	}
	return supervisor.WithScope(ctx, s.scopeOf(ctx, info))
}

// scopeOf is the Scope of the app a call came from (withScope); a
// subscription carries it whether or not a server is shared now, as a
// reload may share one later. info is the client name the call's request
// gives ("" for none).
func (s *Service) scopeOf(ctx context.Context, info string) supervisor.Scope {
	sc := supervisor.Scope{Root: rootOf(ctx)}
	if c := connFromContext(ctx); c != nil {
		sc.App, sc.Owner, sc.Alive = c.identityOf(clientOf(ctx).Name, info), c.id, c.open
	}
	if sc.Root == "" {
		// A host's declared roots pick its app's root (hostscope.go).
		app, conn := sc.App, sc.Owner
		sc.HostRoot = func(ctx context.Context) string { return s.hosts.declaredRoot(ctx, conn, app) }
	}
	return sc
}

// cleanRoot is an absolute root made clean; anything else is kept as is
// (the supervisor refuses it when a call needs it).
func cleanRoot(root string) string {
	if filepath.IsAbs(root) {
		return filepath.Clean(root)
	}
	return root
}

// An app's identity, the key of its instance of a "client" server, is one
// for every request it makes, whichever door it comes in by. It is a
// name, the host's own (its clientInfo name, without the " (mcpdctl
// bridge)" the gRPC bridge adds), and what tells two runs of that host
// apart:
//
//   - a gRPC app: its process id (so every connection of one process, a
//     reconnect included, reaches one instance), else its connection; the
//     name is the one its door gives for the call (WithClient, from
//     mcpdv1.MetadataClientName, as mcpdctl bridge with
//     MCPD_BRIDGE_RELAY=0 sends its host's name on every call), else the one fixed on its first call that needed an
//     identity (its request's client name, else the connection's);
//   - mcpdctl bridge through mcpd's bridge socket: the host's name, which
//     mcpdctl reads from the host's first message and sends in its
//     header, and the mcpdctl process's pid (the socket's SO_PEERCRED),
//     fixed when the session opens (App.Identify); the same identity
//     as the same host through the gRPC bridge. A header without the
//     host's name leaves it to the first call, as for a gRPC app;
//   - an HTTP-face session: the host's name from its initialize and the
//     session itself, fixed when the session starts. Not the peer's
//     process: one process may run several hosts (and one HTTP client
//     pools their connections), and the session's end is the host's;
//   - a modern (2026-07-28) HTTP-face host, which has no session: the
//     name its requests' clientInfo gives and its peer's process (the
//     socket's SO_PEERCRED, the holder of a loopback TCP peer socket), fixed
//     when its first request makes it an app; it leaves when every
//     connection its requests came on has closed. Without the peer's
//     process, the app itself stands for it;
//   - any other HTTP-face request: the app of its TCP connection, fixed
//     on its first call as for a gRPC app.
//
// Once fixed, only the name a call's door gives changes it (for that call):
// a call made before the host said who it is (the bridge lists and
// subscribes while it starts) and one made after reach the same instance.

// identityOf is the app identity of a call of c whose door names the app
// meta (WithClient) and whose request names it info ("" for none).
func (c *appConn) identityOf(meta, info string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.fixed:
		return c.identity
	case meta != "":
		key := c.identityKeyLocked(meta)
		if c.identity == "" {
			c.identity = key
		}
		return key
	case c.identity == "":
		if info == "" {
			info = c.name
		}
		c.identity = c.identityKeyLocked(info)
	}
	return c.identity
}

// identify fixes c's identity: the host name and, when session, the app
// as an HTTP session rather than a process.
func (c *appConn) identify(name string, session bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session = session
	c.identity, c.fixed = c.identityKeyLocked(name), true
}

// identityKeyLocked is the identity of the app c under the client name
// name; c.mu is held.
func (c *appConn) identityKeyLocked(name string) string {
	name = strings.TrimSuffix(name, bridgeClientSuffix)
	if name == "" {
		name = "app"
	}
	switch {
	case c.session:
		return name + " (HTTP session " + strconv.FormatUint(c.id, 10) + ")"
	case c.pid > 0:
		return name + " (pid " + strconv.Itoa(c.pid) + ")"
	}
	return name + " (connection " + strconv.FormatUint(c.id, 10) + ")"
}
