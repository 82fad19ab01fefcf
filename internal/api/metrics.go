package api

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

// callCached is s.sup.CallCached, timed for the observer. Requests for a
// server that does not exist are not observed, so that an app cannot grow
// the set of label values by asking for made-up names.
func (s *Server) callCached(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, cache.Source, error) {
	if s.obs == nil || req == nil {
		return s.sup.CallCached(ctx, server, req, opts)
	}
	start := time.Now()
	resp, src, err := s.sup.CallCached(ctx, server, req, opts)
	if err == nil || !errors.Is(err, supervisor.ErrUnknownServer) {
		s.obs.ObserveCall(server, req.Method, time.Since(start))
	}
	return resp, src, err
}

// listCached is s.sup.ListCached, timed for the observer like callCached.
func (s *Server) listCached(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, cache.Source, error) {
	if s.obs == nil {
		return s.sup.ListCached(ctx, server, method, base, opts)
	}
	start := time.Now()
	items, src, err := s.sup.ListCached(ctx, server, method, base, opts)
	if err == nil || !errors.Is(err, supervisor.ErrUnknownServer) {
		s.obs.ObserveCall(server, method, time.Since(start))
	}
	return items, src, err
}
