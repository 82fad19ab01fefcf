package httpface

import (
	"context"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/bridge"
)

// connApp is the app of one HTTP connection, registered with the Server at
// the connection's first call rather than when it opens: a connection
// whose requests all belong to legacy sessions (apps of their own,
// Backend.NewCaller) is not listed in status as an app that never called.
type connApp struct {
	make func() *api.LocalApp

	mu     sync.Mutex // guards app and closed
	app    *api.LocalApp
	closed bool // the connection ended: an app made now is closed at once
}

// get is the connection's app, made on the first call.
func (c *connApp) get() *api.LocalApp {
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

// close removes the connection's app from status, and any made later.
func (c *connApp) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	if c.app != nil {
		c.app.Close()
	}
}

// withApp returns ctx carrying the app of an HTTP connection, as the
// bridge's caller: the bridge keeps it on the calls it makes for the
// connection's requests, even those that outlive them.
func withApp(ctx context.Context, a *connApp) context.Context {
	return bridge.WithCaller(ctx, a)
}

// appFromContext returns the app of ctx's caller: a legacy session's
// (Backend.NewCaller), else its connection's; nil when it has none.
func appFromContext(ctx context.Context) *api.LocalApp {
	switch c := bridge.CallerFrom(ctx).(type) {
	case *api.LocalApp:
		return c
	case *connApp:
		return c.get()
	}
	return nil
}
