package httpface

import (
	"cmp"
	"context"
	"strconv"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
)

var _ bridge.HostCallers = (*Backend)(nil)

// hostApp is the app of one modern (2026-07-28) host, which has no
// session: the requests of one clientInfo name from one peer process
// (Backend.NewHostCaller), whichever connections they come on. It is
// there while a connection that carried one of its requests is open;
// once the last closes, its host is gone.
type hostApp struct {
	app  *core.App
	gone chan struct{} // closed when the last connection closed

	mu    sync.Mutex // guards conns and ended; taken before a connApp's
	conns map[*connApp]struct{}
	ended bool // gone, or end ran: nothing attaches any more
}

// peerOf is the peer check of the connection ctx's request came on, nil
// for none (a call not made through a Face).
func peerOf(ctx context.Context) *connPeer {
	p, _ := ctx.Value(peerKey{}).(*connPeer)
	return p
}

// HostPeer is what tells two modern hosts of one name apart: the process
// of the peer of ctx's connection (a Unix socket's SO_PEERCRED, a loopback
// TCP peer socket's holder), "" when unknown.
func (b *Backend) HostPeer(ctx context.Context) string {
	if p := peerOf(ctx); p != nil {
		if pid := p.processID(); pid > 0 {
			return "pid " + strconv.Itoa(pid)
		}
	}
	return ""
}

// NewHostCaller makes a modern host an app of its own, of the peer of
// ctx's connection, listed in status by the host's name: its identity for
// servers shared per client is the host's name and that peer's process (core.App.Identify), as a
// bridge's is. gone is closed once every connection its requests came on
// has closed; nil when ctx came on none.
func (b *Backend) NewHostCaller(ctx context.Context, host string) (any, <-chan struct{}, func()) {
	uid, pid := -1, 0
	p := peerOf(ctx)
	if p != nil {
		uid, pid = p.uid, p.processID()
	}
	a := b.srv.NewLocalApp(core.TransportHTTP, cmp.Or(host, DefaultAppName), uid, pid)
	a.Identify(host, false)
	h := &hostApp{app: a, gone: make(chan struct{}), conns: map[*connApp]struct{}{}}
	if p == nil || p.app == nil {
		return h, nil, h.end
	}
	if !h.attach(p.app) { // its connection closed already
		h.mu.Lock()
		h.leftLocked()
		h.mu.Unlock()
	}
	return h, h.gone, h.end
}

// Attach counts the connection of ctx's request as one of caller's, a
// host app's; false once that host is gone.
func (b *Backend) Attach(ctx context.Context, caller any) bool {
	h, ok := caller.(*hostApp)
	if !ok {
		return true
	}
	if p := peerOf(ctx); p != nil && p.app != nil {
		return h.attach(p.app)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.ended
}

// attach adds c to h's connections, false when h ended or c closed.
func (h *hostApp) attach(c *connApp) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ended {
		return false
	}
	if _, ok := h.conns[c]; ok {
		return true
	}
	if !c.addHost(h) {
		return false
	}
	h.conns[c] = struct{}{}
	return true
}

// detach removes c, which closed, from h's connections: the host is gone
// with its last.
func (h *hostApp) detach(c *connApp) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.conns[c]; !ok {
		return
	}
	delete(h.conns, c)
	if len(h.conns) == 0 {
		h.leftLocked()
	}
}

// leftLocked marks h's host gone; h.mu is held.
func (h *hostApp) leftLocked() {
	if !h.ended {
		h.ended = true
		close(h.gone)
	}
}

// end removes h's app from status, and h from its connections.
func (h *hostApp) end() {
	h.mu.Lock()
	h.ended = true
	conns := h.conns
	h.conns = map[*connApp]struct{}{}
	h.mu.Unlock()
	for c := range conns {
		c.removeHost(h)
	}
	h.app.Close()
}
