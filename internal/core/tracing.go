package core

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// Tracer traces the requests of apps (internal/tracing implements it with
// OpenTelemetry). Its methods are called on the request's goroutine and
// must be safe for concurrent use.
type Tracer interface {
	// StartRequest starts the span of one app request to server, a child
	// of the trace context the app sent (in the gRPC call's metadata or the
	// request's _meta), and returns ctx carrying it and the func that ends
	// it with the outcome.
	StartRequest(ctx context.Context, server string, req *session.Request) (context.Context, func(resp *session.Response, src cache.Source, err error))
}

// noEnd ends nothing.
func noEnd(*session.Response, cache.Source, error) {}

// traceCall starts the span of one request, when tracing is on.
func (s *Service) traceCall(ctx context.Context, server string, req *session.Request) (context.Context, func(*session.Response, cache.Source, error)) {
	if s.tracer == nil {
		return ctx, noEnd
	}
	return s.tracer.StartRequest(ctx, server, req)
}
