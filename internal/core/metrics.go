package core

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// CallObserver is told how long each MCP request an app made through the
// API took, per server and MCP method, cache hits included (Options.Observer;
// internal/metrics implements it with a Prometheus histogram). ObserveCall
// runs on the request's goroutine after the answer is known and before it
// is sent: it must be cheap and must not block.
type CallObserver interface {
	ObserveCall(server, method string, d time.Duration)
}

// callCached is s.sup.CallCached, timed for the observer, traced and
// audited (audit.go, tracing.go), and noted as the app's use of server
// (sharing.go). Requests for a server that does not exist are not
// observed, so that an app cannot grow the set of label values by asking
// for made-up names.
func (s *Service) callCached(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, cache.Source, error) {
	resp, src, err := s.callObserved(ctx, server, req, opts)
	noteUse(ctx, server, err)
	return resp, src, err
}

// callObserved is callCached but for noting the use.
func (s *Service) callObserved(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, cache.Source, error) {
	if (s.obs == nil && s.auditOptions().Log == nil && s.tracer == nil) || req == nil {
		return s.sup.CallCached(ctx, server, req, opts)
	}
	start := time.Now()
	ctx, end := s.traceCall(ctx, server, req) // tracing.go
	resp, src, err := s.sup.CallCached(ctx, server, req, opts)
	known := err == nil || !errors.Is(err, supervisor.ErrUnknownServer)
	if s.obs != nil && known {
		s.obs.ObserveCall(server, req.Method, time.Since(start))
	}
	if known {
		s.auditCall(ctx, server, req, resp, src, err, start)
	}
	end(resp, src, err)
	return resp, src, err
}

// listCached is s.sup.ListCached, timed for the observer like callCached,
// traced, and noted as the app's use of server.
func (s *Service) listCached(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, cache.Source, error) {
	items, src, err := s.listObserved(ctx, server, method, base, opts)
	noteUse(ctx, server, err)
	return items, src, err
}

// listObserved is listCached but for noting the use.
func (s *Service) listObserved(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, cache.Source, error) {
	if s.obs == nil && s.tracer == nil {
		return s.sup.ListCached(ctx, server, method, base, opts)
	}
	start := time.Now()
	ctx, end := s.traceCall(ctx, server, &session.Request{Method: method})
	items, src, err := s.sup.ListCached(ctx, server, method, base, opts)
	if s.obs != nil && (err == nil || !errors.Is(err, supervisor.ErrUnknownServer)) {
		s.obs.ObserveCall(server, method, time.Since(start))
	}
	end(&session.Response{Result: items}, src, err)
	return items, src, err
}
