package bridge

import "context"

// A Backend call's caller is whoever the backend attributes it to: for the
// daemon's HTTP face, the app of the HTTP connection the host request came
// on. The bridge knows nothing of it; it only keeps it on the calls it
// makes for a request on a context of its own (a call that may outlive
// the request, mrtr.go), so that such a call is still the caller's.

type callerKey struct{}

// WithCaller returns ctx carrying caller for Backend calls.
func WithCaller(ctx context.Context, caller any) context.Context {
	return context.WithValue(ctx, callerKey{}, caller)
}

// CallerFrom is the caller WithCaller put in ctx, or nil.
func CallerFrom(ctx context.Context) any {
	return ctx.Value(callerKey{})
}

// withCallerOf returns ctx carrying the caller of from, if it has one.
func withCallerOf(ctx, from context.Context) context.Context {
	if c := CallerFrom(from); c != nil {
		return WithCaller(ctx, c)
	}
	return ctx
}
