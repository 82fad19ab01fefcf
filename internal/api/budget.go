package api

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// DefaultRequestMemoryBudget is the default bound of the sum of the sizes
// of the requests in flight, in bytes (mcpd --request-memory-budget).
const DefaultRequestMemoryBudget = 256 << 20

// memBudget bounds the memory held by requests in flight, daemon-wide. A
// request is charged what it holds, from when gRPC has decoded it until
// its handler returns: its size, since a large request is held about once
// (its large strings are views of the message gRPC received, codec.go; a
// tools/call's arguments go to the child in place, session.Request's
// Arguments; the message written to the child is parts, not a copy), plus
// what its caller holds besides it in mcpd (WithAlsoHeld: a host's HTTP
// body or relay line whose params were rewritten for mcpd). Capping the
// sum refuses a burst of large requests instead of exhausting memory. The
// charge comes after decoding, which gRPC does before any handler or
// interceptor runs: a refused request's own copies are garbage at once.
type memBudget struct {
	limit int64
	used  atomic.Int64 // bytes charged to requests in flight
}

func newMemBudget(limit int64) *memBudget {
	if limit <= 0 {
		limit = DefaultRequestMemoryBudget
	}
	return &memBudget{limit: limit}
}

// charge reserves n bytes, or returns RESOURCE_EXHAUSTED saying why not.
func (b *memBudget) charge(n int64) error {
	if n > b.limit {
		return codeError(service.ResourceExhausted,
			"request of %s exceeds the daemon's request memory budget of %s (mcpd --request-memory-budget)", mib(n), mib(b.limit))
	}
	for {
		used := b.used.Load()
		if used+n > b.limit {
			return codeError(service.ResourceExhausted,
				"request of %s refused: the daemon's request memory budget of %s (mcpd --request-memory-budget) is held by requests in flight; retry later",
				mib(n), mib(b.limit))
		}
		if b.used.CompareAndSwap(used, used+n) {
			return nil
		}
	}
}

func (b *memBudget) release(n int64) { b.used.Add(-n) }

// charge charges n bytes of a call in flight to the budget, returning what
// gives them back when the call ends; every door's calls are charged
// through it.
func (s *Server) charge(n int64) (release func(), err error) {
	if err := s.budget.charge(n); err != nil {
		return nil, err
	}
	return func() { s.budget.release(n) }, nil
}

// mib renders a byte count for an error message.
func mib(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%d bytes", n)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

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
	release, err := s.charge(messageSize(req) + alsoHeld(ctx))
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
	bs := &budgetedStream{ServerStream: ss, b: s.budget}
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
	b *memBudget

	mu   sync.Mutex // guards held
	held int64      // the charge of the message received
}

func (s *budgetedStream) RecvMsg(m any) error {
	if err := s.ServerStream.RecvMsg(m); err != nil {
		return err
	}
	n := messageSize(m) + alsoHeld(s.Context())
	if err := s.b.charge(n); err != nil {
		return err
	}
	s.mu.Lock()
	s.held += n
	s.mu.Unlock()
	return nil
}

func (s *budgetedStream) releaseHeld() {
	s.mu.Lock()
	n := s.held
	s.held = 0
	s.mu.Unlock()
	s.b.release(n)
}

// alsoHeldKey is the context key of WithAlsoHeld.
type alsoHeldKey struct{}

// WithAlsoHeld returns ctx for an in-process call (LocalApp) whose caller
// holds n bytes in mcpd besides the request it passes, for as long as the
// call runs: the request memory budget charges them too.
func WithAlsoHeld(ctx context.Context, n int64) context.Context {
	if n <= 0 {
		return ctx
	}
	return context.WithValue(ctx, alsoHeldKey{}, n)
}

// alsoHeld is ctx's WithAlsoHeld bytes, 0 for none.
func alsoHeld(ctx context.Context) int64 {
	n, _ := ctx.Value(alsoHeldKey{}).(int64)
	return n
}
