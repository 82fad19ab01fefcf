package bridge

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// MetadataRoot is the request metadata key naming the workspace root a
// bridge's calls are made in (mcpdctl bridge --root DIR); mcpd runs the
// instance of a server with share "root" for it. The daemon's api package
// reads the same key.
const MetadataRoot = "mcpd-root"

// RootDialOptions returns the dial options that send root, an absolute
// directory, with every call of the connection.
func RootDialOptions(root string) []grpc.DialOption {
	add := func(ctx context.Context) context.Context {
		return metadata.AppendToOutgoingContext(ctx, MetadataRoot, root)
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
