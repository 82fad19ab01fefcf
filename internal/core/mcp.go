package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// progressBuffer is how many progress notifications and log messages of one
// call may wait for the app's stream (a channel of that many slots, made
// for a call's first one); beyond it the oldest are dropped. 64 lost most
// of a burst of log messages on the way to a bridge's host.
const progressBuffer = 1024

// The MCP list methods List serves.
const (
	MethodToolsList             = "tools/list"
	MethodPromptsList           = "prompts/list"
	MethodResourcesList         = "resources/list"
	MethodResourceTemplatesList = "resources/templates/list"
)

// Methods SendRequest refuses: the session owns the lifecycle, and
// subscriptions go through the subscription API, where mcpd keeps one
// upstream subscription per child for every app watching (a raw
// resources/unsubscribe of one app would end it for all of them).
var reservedMethods = map[string]string{
	"initialize":            "the session performs the handshake itself",
	"server/discover":       "the session performs the handshake itself",
	"subscriptions/listen":  subscribeInstead,
	"resources/subscribe":   subscribeInstead,
	"resources/unsubscribe": subscribeInstead,
}

const subscribeInstead = "subscriptions are shared between apps and managed by mcpd; use the Subscribe and UpdateSubscription RPCs"

// SendRequest validates r and sends it to its server under the call's
// profile, passing its progress and log messages to emit (never
// concurrently) before it returns the answer. Every door's requests other
// than tools/call and the named RPCs take this path.
func (s *Service) SendRequest(ctx context.Context, r service.Request, emit func(service.Event) error) (Answer, error) {
	if r.Server == "" {
		return Answer{}, codeError(service.InvalidArgument, "server name required")
	}
	method := r.Method
	if method == "" {
		return Answer{}, codeError(service.InvalidArgument, "method required")
	}
	if strings.HasPrefix(method, "notifications/") {
		return Answer{}, codeError(service.InvalidArgument, "method %q is a notification, not a request", method)
	}
	if why, ok := reservedMethods[method]; ok {
		return Answer{}, codeError(service.InvalidArgument, "method %q cannot be sent: %s", method, why)
	}
	params, err := JSONObject("params_json", r.Params)
	if err != nil {
		return Answer{}, err
	}
	if params == nil {
		params = json.RawMessage("{}") // "empty means {}"
	}
	if method == methodToolsCall {
		return s.sendToolCall(ctx, r.Server, params, r.Options, emit)
	}
	base, copts, err := s.settings(ctx, r.Options)
	if err != nil {
		return Answer{}, err
	}
	rs, err := s.profileGate(ctx, r.Server)
	if err != nil {
		return Answer{}, err
	}
	if hidden := hiddenItem(rs, method, params); hidden != nil {
		return Answer{Hidden: hidden}, nil
	}
	base.Method = method
	base.Params = params
	return s.callRelayed(ctx, r.Server, base, copts, rs, emit)
}

// Read validates a resources/Read and makes it.
func (s *Service) Read(ctx context.Context, r service.Read) (Answer, error) {
	if r.Server == "" {
		return Answer{}, codeError(service.InvalidArgument, "server name required")
	}
	if r.URI == "" {
		return Answer{}, codeError(service.InvalidArgument, "resource uri required")
	}
	inputResponses, err := JSONObject("input_responses_json", r.InputResponses)
	if err != nil {
		return Answer{}, err
	}
	params, err := json.Marshal(struct {
		URI            string          `json:"uri"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   string          `json:"requestState,omitempty"`
	}{r.URI, inputResponses, r.RequestState})
	if err != nil {
		return Answer{}, codeError(service.Internal, "encode resources/read params: %v", err)
	}
	return s.call(ctx, r.Server, "resources/read", params, r.Options)
}

// call forwards one request under the call's profile and waits for its
// answer.
func (s *Service) call(ctx context.Context, server, method string, params json.RawMessage, o service.Options) (Answer, error) {
	req, copts, err := s.settings(ctx, o)
	if err != nil {
		return Answer{}, err
	}
	rs, err := s.profileGate(ctx, server)
	if err != nil {
		return Answer{}, err
	}
	if hidden := hiddenItem(rs, method, params); hidden != nil {
		return Answer{Hidden: hidden}, nil
	}
	req.Method = method
	req.Params = params
	return s.answer(ctx, server, req, copts)
}

// answer makes req of server, with no progress or log messages to pass
// on, and returns its answer.
func (s *Service) answer(ctx context.Context, server string, req *session.Request, copts supervisor.CallOptions) (Answer, error) {
	start := time.Now()
	resp, src, err := s.callCached(ctx, server, req, copts)
	if err != nil {
		s.logCallError(ctx, server, req.Method, err)
		return Answer{}, ToError(err)
	}
	if resp == nil {
		return Answer{}, codeError(service.Internal, "%s on %q: no response", req.Method, server)
	}
	return Answer{Response: resp, Source: serviceSource(src), Duration: time.Since(start)}, nil
}

// Answer is the outcome of a call: the server's response (never nil),
// where it came from and how long it took; or, for an item the call's
// profile hides, Hidden, the error a server gives for one it lacks.
type Answer struct {
	Response *session.Response
	Source   service.Source
	Duration time.Duration
	Hidden   *session.RPCError
}

// callRelayed forwards one request, passing its progress notifications and
// log messages to emit, and returns its answer. The session delivers
// progress on the child's reader goroutine, which must never block:
// notifications go through a bounded queue that drops the oldest when the
// app reads too slowly.
//
// The call runs on the caller's goroutine itself. Most calls carry no
// progress, so the queue and the goroutine that passes progress to emit
// are made only by the first notification (progressRelay); once the call
// returned, the caller stops that goroutine and passes what is still
// queued. At any time only one goroutine calls emit. (A goroutine per
// call for sup.Call, and a channel hop back to the handler, cost two
// scheduler wake-ups per call on the hot path; see BENCHMARKS.md.)
func (s *Service) callRelayed(ctx context.Context, server string, req *session.Request, copts supervisor.CallOptions, rs *profile.Server, emit func(service.Event) error) (Answer, error) {
	r := &progressRelay{log: s.log, emit: emit, server: server}
	req.OnProgress = r.push
	req.OnMessage = r.pushMessage

	start := time.Now()
	resp, src, err := s.callCached(ctx, server, req, copts)
	r.finish()
	if err != nil {
		s.logCallError(ctx, server, req.Method, err)
		return Answer{}, ToError(err)
	}
	if resp == nil {
		return Answer{}, codeError(service.Internal, "%s on %q: no response", req.Method, server)
	}
	if resp, err = filterListResult(rs, req.Method, resp); err != nil {
		return Answer{}, err
	}
	return Answer{Response: resp, Source: serviceSource(src), Duration: time.Since(start)}, nil
}

// filterItems applies rs (nil: none) to a list's items when it was
// fetched.
func filterItems(rs *profile.Server, method string, items json.RawMessage, err error) (json.RawMessage, error) {
	if err != nil || rs == nil {
		return items, err
	}
	out, ferr := rs.FilterItems(method, items)
	if ferr != nil {
		return nil, fmt.Errorf("apply profile: %w", ferr)
	}
	return out, nil
}

// logCallError logs a failed call: client cancellations and a name that is
// no configured server (the app's mistake, answered NOT_FOUND) at debug,
// the rest at warn level.
func (s *Service) logCallError(ctx context.Context, server, method string, err error) {
	fields := []zap.Field{zap.String("server", server), zap.String("method", method), zap.Error(err)}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		s.log.Debug("call ended early", fields...)
		return
	}
	if errors.Is(err, supervisor.ErrUnknownServer) {
		s.log.Debug("call for an unknown server", fields...)
		return
	}
	s.log.Warn("call failed", fields...)
}

// progressQueue is a bounded queue of the progress (and log message)
// params of one call. push never blocks: when the queue is full it drops
// the oldest entry.
type progressQueue struct {
	ch      chan service.Event
	dropped atomic.Int64
}

func newProgressQueue(n int) *progressQueue {
	return &progressQueue{ch: make(chan service.Event, n)}
}

// push is the session's OnProgress callback.
func (q *progressQueue) push(params json.RawMessage) { q.pushItem(params, false) }

// pushItem queues a copy of params.
func (q *progressQueue) pushItem(params json.RawMessage, message bool) {
	p := service.Event{Kind: service.Progress, Params: append(json.RawMessage(nil), params...)} // the session may reuse its buffer
	if message {
		p.Kind = service.Message
	}
	for {
		select {
		case q.ch <- p:
			return
		default:
		}
		select {
		case <-q.ch:
			q.dropped.Add(1)
		default:
		}
	}
}
