package httpface

import (
	"context"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
)

// connApp is the app of one HTTP connection, registered with the Server at
// the connection's first call rather than when it opens: a connection
// whose requests all belong to legacy sessions (apps of their own,
// Backend.NewCaller) is not listed in status as an app that never called.
type connApp struct {
	make func() *core.App

	mu     sync.Mutex // guards app, closed and hosts
	app    *core.App
	closed bool // the connection ended: an app made now is closed at once
	// hosts are the modern hosts whose requests it carried, told when it
	// closes.
	hosts map[*hostApp]struct{}
}

// get is the connection's app, made on the first call.
func (c *connApp) get() *core.App {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.app == nil {
		c.app = c.make()
		if c.closed {
			c.app.Close()
		}
	}
	return c.app
}

// close removes the connection's app from status, and any made later,
// and tells its hosts.
func (c *connApp) close() {
	c.mu.Lock()
	c.closed = true
	if c.app != nil {
		c.app.Close()
	}
	hosts := c.hosts
	c.hosts = nil
	c.mu.Unlock()
	for h := range hosts { // outside c.mu: a hostApp's lock comes first
		h.detach(c)
	}
}

// addHost counts h among the connection's hosts; false once it closed.
func (c *connApp) addHost(h *hostApp) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if c.hosts == nil {
		c.hosts = map[*hostApp]struct{}{}
	}
	c.hosts[h] = struct{}{}
	return true
}

// removeHost forgets h, which ended.
func (c *connApp) removeHost(h *hostApp) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.hosts, h)
}

// appFromContext returns the app of ctx's caller: a legacy session's
// (Backend.NewCaller) or a modern host's (Backend.NewHostCaller), else
// its connection's (the connection's peer is the caller of its requests,
// and the bridge keeps it on the calls it makes for them, even those that
// outlive them); nil when it has none.
func appFromContext(ctx context.Context) *core.App {
	switch c := bridge.CallerFrom(ctx).(type) {
	case *core.App:
		return c
	case *connPeer:
		if c.app != nil { // allowed (checkPeer) before any of its requests is served
			return c.app.get()
		}
	case *hostApp:
		return c.app
	}
	return nil
}
