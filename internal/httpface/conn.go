package httpface

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/api"
)

// appKey is the context key of a connection's app.
type appKey struct{}

// withApp returns ctx carrying the app of an HTTP connection.
func withApp(ctx context.Context, a *api.LocalApp) context.Context {
	return context.WithValue(ctx, appKey{}, a)
}

// appFromContext returns the app withApp put in ctx, or nil.
func appFromContext(ctx context.Context) *api.LocalApp {
	a, _ := ctx.Value(appKey{}).(*api.LocalApp)
	return a
}
