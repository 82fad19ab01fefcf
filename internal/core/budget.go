package core

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// DefaultRequestMemoryBudget is the default bound of the sum of the sizes
// of the requests in flight, in bytes (mcpd --request-memory-budget).
const DefaultRequestMemoryBudget = 256 << 20

// memBudget bounds the memory held by requests in flight, daemon-wide. A
// request is charged what it holds, from when its door has decoded it
// until it is answered: its size, since a large request is held about once
// (its large strings are views of the message its door received; a
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

// Charge charges n bytes of a call in flight to the budget, returning what
// gives them back when the call ends; every door's calls are charged
// through it.
func (s *Service) Charge(n int64) (release func(), err error) {
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

// alsoHeldKey is the context key of WithAlsoHeld.
type alsoHeldKey struct{}

// WithAlsoHeld returns ctx for an in-process call (App) whose caller
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

// RequestMemoryInUse is how many bytes of the requests in flight the
// request memory budget holds now.
func (s *Service) RequestMemoryInUse() int64 { return s.budget.used.Load() }
