package api

import (
	"context"
	"path/filepath"
	"strconv"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// MetadataRoot is the request metadata key by which an app names the
// workspace root its calls are made in (mcpdctl bridge --root DIR): the
// instance of a server with share "root" that serves them.
const MetadataRoot = "mcpd-root"

// WithRoot returns ctx of an in-process call (a LocalApp's) made in the
// workspace root dir, as a gRPC call names it in its MetadataRoot.
func WithRoot(ctx context.Context, dir string) context.Context {
	md, _ := metadata.FromIncomingContext(ctx)
	md = md.Copy()
	md.Set(MetadataRoot, dir)
	return metadata.NewIncomingContext(ctx, md)
}

// sharer is the part of the supervisor that says whether any server is
// shared per app or per root; without one no call needs a Scope.
type sharer interface{ Shared() bool }

// withScope returns ctx carrying the Scope of the app the call came from,
// when a configured server runs instances (supervisor instances.go).
//
// An app's identity is its client name (from its calls, else its
// metadata) and its process id: every connection of one process, a
// reconnect included, reaches the same "client" instance, and two apps get
// two. An app whose pid is unknown is identified by its connection. The
// instance belongs to the app's connections and goes once all are closed.
func (s *Server) withScope(ctx context.Context) context.Context {
	if sh, ok := s.sup.(sharer); !ok || !sh.Shared() {
		return ctx
	}
	return supervisor.WithScope(ctx, s.scopeOf(ctx))
}

// scopeOf is the Scope of the app a call came from (withScope); a
// subscription carries it whether or not a server is shared now, as a
// reload may share one later.
func (s *Server) scopeOf(ctx context.Context) supervisor.Scope {
	sc := supervisor.Scope{Root: first(metadata.ValueFromIncomingContext(ctx, MetadataRoot))}
	if c := connFromContext(ctx); c != nil {
		name, _ := clientIdentity(ctx, nil)
		c.mu.Lock()
		if name == "" {
			name = c.name
		}
		c.mu.Unlock()
		sc.App, sc.Owner, sc.Alive = appIdentity(name, c), c.id, c.open
	}
	if sc.Root == "" {
		// A host's declared roots pick its app's root (hostscope.go).
		app, conn := sc.App, sc.Owner
		sc.HostRoot = func(ctx context.Context) string { return s.hosts.declaredRoot(ctx, conn, app) }
	}
	return sc
}

// cleanRoot is an absolute root made clean; anything else is kept as is
// (the supervisor refuses it when a call needs it).
func cleanRoot(root string) string {
	if filepath.IsAbs(root) {
		return filepath.Clean(root)
	}
	return root
}

// appIdentity is the key of an app's "client" instance.
func appIdentity(name string, c *appConn) string {
	if name == "" {
		name = "app"
	}
	if c.pid > 0 {
		return name + " (pid " + strconv.Itoa(c.pid) + ")"
	}
	return name + " (connection " + strconv.FormatUint(c.id, 10) + ")"
}

// scopedStream is a server stream whose context carries the app's Scope.
type scopedStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *scopedStream) Context() context.Context { return s.ctx }

// scopeStream returns ss with the app's Scope in its context, if needed.
func (s *Server) scopeStream(ss grpc.ServerStream) grpc.ServerStream {
	ctx := ss.Context()
	if sctx := s.withScope(ctx); sctx != ctx {
		return &scopedStream{ServerStream: ss, ctx: sctx}
	}
	return ss
}
