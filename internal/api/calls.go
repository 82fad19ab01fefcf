package api

import (
	"context"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/mcpd-dev/mcpd/internal/core"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The interceptors give every call what the service's in-process doors
// give theirs (core.App): the request memory budget, the call's
// context as the service reads it (its app, its profile, root and app
// name from the metadata) and its tracking as the app's call in flight on
// its server, which routes that server's requests to the app as host.

// messageSize is the encoded size of a request message.
func messageSize(m any) int64 {
	if pm, ok := m.(proto.Message); ok {
		return int64(proto.Size(pm))
	}
	return 0
}

// budgetUnary charges a unary request against the budget for the time of
// its handler.
func (s *Server) budgetUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	release, err := s.svc.Charge(messageSize(req))
	if err != nil {
		return nil, err
	}
	defer release()
	return handler(ctx, req)
}

// budgetStream charges the request of a server-streaming call for the
// time of its handler. A client-streaming call (Host) is not charged: its
// messages are a host's answers to a child's own requests, one at a time,
// and a refusal would end the host's registration. Nor are the long-lived
// streams (Subscribe, FollowLogs), whose small requests would otherwise
// hold their charge for as long as the app listens.
func (s *Server) budgetStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	if info.IsClientStream || longLived[info.FullMethod] {
		return handler(srv, ss)
	}
	bs := &budgetedStream{ServerStream: ss, svc: s.svc}
	defer bs.releaseHeld()
	return handler(srv, bs)
}

// longLived are the streams that last as long as an app wants them.
var longLived = map[string]bool{
	mcpdv1.Mcpd_Subscribe_FullMethodName:  true,
	mcpdv1.Mcpd_FollowLogs_FullMethodName: true,
}

// budgetedStream is a ServerStream whose received request is charged.
type budgetedStream struct {
	grpc.ServerStream
	svc *core.Service

	mu       sync.Mutex // guards releases
	releases []func()   // of the messages received
}

func (s *budgetedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	release, err := s.svc.Charge(messageSize(m))
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.releases = append(s.releases, release)
	s.mu.Unlock()
	return nil
}

func (s *budgetedStream) releaseHeld() {
	s.mu.Lock()
	releases := s.releases
	s.releases = nil
	s.mu.Unlock()
	for _, release := range releases {
		release()
	}
}

// callContext is the context of a gRPC call as the service reads it: it
// carries the app of the call's connection and what the call's metadata
// names (the profile, the workspace root, the app's name and version).
func callContext(ctx context.Context) context.Context {
	if app := appOf(ctx); app != nil {
		ctx = app.Context(ctx)
	}
	if name := first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataProfile)); name != "" {
		ctx = core.WithProfile(ctx, name)
	}
	if dir := first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataRoot)); dir != "" {
		ctx = core.WithRoot(ctx, dir)
	}
	if name := first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataClientName)); name != "" {
		ctx = core.WithClient(ctx, name, first(metadata.ValueFromIncomingContext(ctx, mcpdv1.MetadataClientVersion)))
	}
	return ctx
}

// first is the first of vs; "" for none.
func first(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}

// serverNamer is a request message naming one server.
type serverNamer interface{ GetServer() string }

// callClientName is the client name a request message gives in its
// options, "" for none.
func callClientName(req any) string {
	if r, ok := req.(interface{ GetOptions() *mcpdv1.CallOptions }); ok {
		return r.GetOptions().GetClient().GetName()
	}
	return ""
}

// daemonTrailer marks every error status mcpd itself sends (statusUnary,
// statusStream), so that a client tells mcpd's UNAVAILABLE (a server that
// is down names it) from a connection to mcpd that failed, which has no
// trailer.
var daemonTrailer = metadata.Pairs(mcpdv1.MetadataDaemon, "1")

// trackUnary gives a unary call its context (callContext) with the app's
// instance scope, and records it as the app's call in flight on its
// server.
func (s *Server) trackUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	ctx = s.svc.WithScope(callContext(ctx), callClientName(req))
	if n, ok := req.(serverNamer); ok {
		defer s.svc.InFlight(ctx, n.GetServer())()
	}
	return handler(ctx, req)
}

// trackStream does what trackUnary does for streaming calls, tracking
// them once their request message has been received.
func (s *Server) trackStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	ts := &trackedStream{ServerStream: ss, svc: s.svc, ctx: s.svc.WithScope(callContext(ss.Context()), "")}
	defer ts.end()
	return handler(srv, ts)
}

// trackedStream is a server stream of the call's context that begins
// tracking at the first received message that names a server.
type trackedStream struct {
	grpc.ServerStream
	svc *core.Service
	ctx context.Context

	mu   sync.Mutex // guards done
	done func()     // ends the tracking; nil until it began
}

func (t *trackedStream) Context() context.Context { return t.ctx }

func (t *trackedStream) RecvMsg(m any) error {
	err := t.ServerStream.RecvMsg(m)
	if err != nil {
		return err
	}
	if n, ok := m.(serverNamer); ok {
		t.mu.Lock()
		if t.done == nil {
			t.done = t.svc.InFlight(t.ctx, n.GetServer())
		}
		t.mu.Unlock()
	}
	return nil
}

func (t *trackedStream) end() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done != nil {
		t.done()
	}
}
