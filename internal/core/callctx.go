package core

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// What a call's door tells of it besides its request, carried in its
// context: the app it comes from (App.Context), the profile it is made
// under (WithProfile), its workspace root (WithRoot) and the app's name
// as its door gives it (WithClient). The gRPC door reads them from a
// call's metadata; the in-process doors set them themselves.

// rootKey marks a context with the workspace root of its call.
type rootKey struct{}

// clientKey marks a context with the app's identity its door gives.
type clientKey struct{}

// WithRoot returns ctx of a call made in the workspace root dir (the
// gRPC door: mcpdv1.MetadataRoot).
func WithRoot(ctx context.Context, dir string) context.Context {
	return context.WithValue(ctx, rootKey{}, dir)
}

// rootOf is the workspace root of ctx's call; "" for none.
func rootOf(ctx context.Context) string {
	dir, _ := ctx.Value(rootKey{}).(string)
	return dir
}

// WithClient returns ctx of a call whose door names the app (the gRPC
// door: mcpdv1.MetadataClientName and MetadataClientVersion), for calls
// whose request does not.
func WithClient(ctx context.Context, name, version string) context.Context {
	return context.WithValue(ctx, clientKey{}, service.Client{Name: name, Version: version})
}

// clientOf is the app's identity ctx's door gives; zero for none.
func clientOf(ctx context.Context) service.Client {
	c, _ := ctx.Value(clientKey{}).(service.Client)
	return c
}
