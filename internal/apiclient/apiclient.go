// Package apiclient is the client side of mcpd's gRPC API (internal/api
// serves it): how a program of this module dials mcpd's socket, how its
// calls carry the request metadata mcpd reads (the app's name and version,
// a profile, a workspace root), how a failed call is read back as the
// service's error, its class and code (ServiceError), and how a call that
// lost its connection is told from one that found no mcpd (TellLostCalls). mcpdctl, the
// bridge's gRPC backend (internal/bridgegrpc), the benchmark and the end-to-end harnesses all
// dial through it, so that the options of a connection to mcpd are stated
// once.
//
// It depends on gRPC, proto/mcpd/v1 and internal/service only, never on
// the daemon's packages, so that mcpdctl can link it.
package apiclient

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// MaxResponseSize is the largest message a client takes from mcpd. mcpd
// passes a child's result on whole, up to the server's maxLineSize (32 MiB
// by default, and configurable), where gRPC's default would refuse
// anything over 4 MiB.
const MaxResponseSize = math.MaxInt32

// Option is a setting of Dial.
type Option func(*settings)

type settings struct {
	every Metadata
	dial  []grpc.DialOption
}

// Reconnect makes the connection retry soon after mcpd comes back: after
// base at first, growing 1.6 times (with 20% jitter) up to max, each
// attempt given at least connectTimeout. gRPC's default backoff grows to
// two minutes, too slow to notice a restart.
func Reconnect(base, max, connectTimeout time.Duration) Option {
	return DialOptions(grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: base, Multiplier: 1.6, Jitter: 0.2, MaxDelay: max},
		MinConnectTimeout: connectTimeout,
	}))
}

// EveryCall makes every call of the connection carry md's non-empty
// fields, but for the keys the call's own context already sets (Outgoing):
// the call's word is the more specific.
func EveryCall(md Metadata) Option {
	return func(s *settings) { s.every = md }
}

// DialOptions adds gRPC dial options, after Dial's own.
func DialOptions(opts ...grpc.DialOption) Option {
	return func(s *settings) { s.dial = append(s.dial, opts...) }
}

// Dial prepares a client connection to mcpd's socket at path (made
// absolute). It connects lazily: the first call does, or fails. The
// transport credentials are insecure because there is nothing to encrypt
// on a Unix socket: mcpd checks the peer's uid (SO_PEERCRED) itself.
func Dial(path string, opts ...Option) (*grpc.ClientConn, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("socket path: %w", err)
	}
	var s settings
	for _, o := range opts {
		o(&s)
	}
	dial := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxResponseSize)),
	}
	if pairs := s.every.pairs(); len(pairs) > 0 {
		dial = append(dial, everyCall(pairs)...)
	}
	conn, err := grpc.NewClient("unix://"+abs, append(dial, s.dial...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", abs, err)
	}
	return conn, nil
}

// Metadata is what a call tells mcpd beside its request, each field ""
// for not said.
type Metadata struct {
	// Client and Version name the app (as status shows it); a call's
	// CallOptions.client overrides them.
	Client, Version string
	// Profile is the profile of the config the call is made under.
	Profile string
	// Root is the workspace root, an absolute directory, the call is made
	// in: the instance of a server shared per root that serves it.
	Root string
}

// pairs are md's non-empty fields as metadata key, value pairs.
func (md Metadata) pairs() []string {
	var kv []string
	for _, f := range [...]struct{ key, value string }{
		{mcpdv1.MetadataClientName, md.Client},
		{mcpdv1.MetadataClientVersion, md.Version},
		{mcpdv1.MetadataProfile, md.Profile},
		{mcpdv1.MetadataRoot, md.Root},
	} {
		if f.value != "" {
			kv = append(kv, f.key, f.value)
		}
	}
	return kv
}

// Outgoing returns ctx whose gRPC calls carry md's non-empty fields, each
// in place of any value ctx gave its key before; ctx itself when md says
// nothing.
func Outgoing(ctx context.Context, md Metadata) context.Context {
	kv := md.pairs()
	if len(kv) == 0 {
		return ctx
	}
	out, ok := metadata.FromOutgoingContext(ctx) // a copy
	if !ok {
		out = metadata.MD{}
	}
	for i := 0; i < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return metadata.NewOutgoingContext(ctx, out)
}

// everyCall is the interceptors that add the pairs kv to each call whose
// context does not set their key already.
func everyCall(kv []string) []grpc.DialOption {
	add := func(ctx context.Context) context.Context {
		var missing []string
		for i := 0; i < len(kv); i += 2 {
			if len(metadata.ValueFromOutgoingContext(ctx, kv[i])) == 0 {
				missing = append(missing, kv[i], kv[i+1])
			}
		}
		if len(missing) == 0 {
			return ctx
		}
		return metadata.AppendToOutgoingContext(ctx, missing...)
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
