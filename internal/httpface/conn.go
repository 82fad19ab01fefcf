package httpface

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/bridge"
)

// withApp returns ctx carrying the app of an HTTP connection, as the
// bridge's caller: the bridge keeps it on the calls it makes for the
// connection's requests, even those that outlive them.
func withApp(ctx context.Context, a *api.LocalApp) context.Context {
	return bridge.WithCaller(ctx, a)
}

// appFromContext returns the app withApp put in ctx, or nil.
func appFromContext(ctx context.Context) *api.LocalApp {
	a, _ := bridge.CallerFrom(ctx).(*api.LocalApp)
	return a
}
