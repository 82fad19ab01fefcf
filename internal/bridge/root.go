package bridge

import (
	"context"
)

// The workspace root of a bridge (Options.Root) travels like its profile:
// in the context of each Backend call (WithRoot), as its request metadata
// over the socket (internal/bridgegrpc, apiclient.Metadata.Root) and as incoming
// metadata in the daemon's own process (the HTTP face's backend).

type rootKey struct{}

// WithRoot returns ctx for Backend calls in the workspace root dir.
func WithRoot(ctx context.Context, dir string) context.Context {
	if dir == "" {
		return ctx
	}
	return context.WithValue(ctx, rootKey{}, dir)
}

// RootFrom is the workspace root of a Backend call's context, "" for none.
func RootFrom(ctx context.Context) string {
	dir, _ := ctx.Value(rootKey{}).(string)
	return dir
}
