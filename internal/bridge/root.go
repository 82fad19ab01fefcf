package bridge

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The workspace root of a bridge (Options.Root) travels like its profile:
// in the context of each Backend call (WithRoot), as mcpdv1.MetadataRoot over the
// socket (GRPCBackend) and as incoming metadata in the daemon's own
// process (the HTTP face's backend).

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

// RootDialOptions returns the dial options that send root, an absolute
// directory, with every call of the connection.
func RootDialOptions(root string) []grpc.DialOption {
	add := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, mcpdv1.MetadataRoot, root)
	}
	return []grpc.DialOption{
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			return invoker(add(ctx), method, req, reply, cc, opts...)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			return streamer(add(ctx), desc, cc, method, opts...)
		}),
	}
}
