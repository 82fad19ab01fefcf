package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// MaxTimeoutMs is the largest CallOptions.timeout_ms accepted: the most
// whole milliseconds a time.Duration holds (about 292 years). A larger
// value would overflow into a negative or zero timeout, so it is refused;
// anything up to it is capped by the supervisor's MaxRequestTimeout.
const MaxTimeoutMs = math.MaxInt64 / int64(time.Millisecond)

// progressBuffer is how many progress notifications and log messages of one
// call may wait for the app's stream (a channel of that many slots, made
// for a call's first one); beyond it the oldest are dropped. 64 lost most
// of a burst of log messages on the way to a bridge's host.
const progressBuffer = 1024

// MCP list methods served by the List RPCs.
const (
	methodToolsList             = "tools/list"
	methodPromptsList           = "prompts/list"
	methodResourcesList         = "resources/list"
	methodResourceTemplatesList = "resources/templates/list"
)

// CallTool calls a tool, streaming its progress notifications and then the
// response: the gRPC face of prepareToolCall.
func (s *Server) CallTool(req *mcpdv1.CallToolRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return err
	}
	tc, err := s.prepareToolCall(stream.Context(), toolCallOf(req), o, false)
	if err != nil {
		return err
	}
	if tc.hidden != nil {
		return sendHidden(stream, req.GetServer(), tc.hidden)
	}
	return s.streamCall(stream, req.GetServer(), tc.req, tc.copts, tc.rs)
}

// CallToolUnary calls a tool and returns its response, without progress
// or log events: the app asked for none, and a unary RPC is cheaper than
// a stream on both sides.
func (s *Server) CallToolUnary(ctx context.Context, req *mcpdv1.CallToolRequest) (*mcpdv1.McpResponse, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	tc, err := s.prepareToolCall(ctx, toolCallOf(req), o, true)
	if err != nil {
		return nil, err
	}
	if tc.hidden != nil {
		return &mcpdv1.McpResponse{Server: req.GetServer(), Error: mcpErrorToProto(tc.hidden)}, nil
	}
	start := time.Now()
	resp, src, err := s.callCached(ctx, req.GetServer(), tc.req, tc.copts)
	if err != nil {
		s.logCallError(ctx, req.GetServer(), tc.req.Method, err)
		return nil, toError(err)
	}
	if resp == nil {
		return nil, codeError(service.Internal, "tools/call on %q: no response", req.GetServer())
	}
	return toMcpResponse(req.GetServer(), resp, src, time.Since(start)), nil
}

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

// SendRequest sends any other MCP request to a server, streaming its
// progress notifications and then the response: the gRPC face of
// sendRequest.
func (s *Server) SendRequest(req *mcpdv1.SendRequestRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	r, err := requestOf(req)
	if err != nil {
		return err
	}
	a, err := s.sendRequest(stream.Context(), r, streamEmitter(stream))
	if err != nil {
		return err
	}
	return sendAnswer(stream, req.GetServer(), a)
}

// requestOf is req as the service takes it: its params a view of req's,
// not a copy; options.timeout_ms is checked here.
func requestOf(req *mcpdv1.SendRequestRequest) (service.Request, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return service.Request{}, err
	}
	return service.Request{Server: req.GetServer(), Method: req.GetMethod(), Params: stringBytes(req.GetParamsJson()), Options: o}, nil
}

// sendRequest validates r and sends it to its server under the call's
// profile, passing its progress and log messages to emit (never
// concurrently) before it returns the answer. Every door's requests other
// than tools/call and the named RPCs take this path.
func (s *Server) sendRequest(ctx context.Context, r service.Request, emit func(relayItem) error) (answer, error) {
	if r.Server == "" {
		return answer{}, codeError(service.InvalidArgument, "server name required")
	}
	method := r.Method
	if method == "" {
		return answer{}, codeError(service.InvalidArgument, "method required")
	}
	if strings.HasPrefix(method, "notifications/") {
		return answer{}, codeError(service.InvalidArgument, "method %q is a notification, not a request", method)
	}
	if why, ok := reservedMethods[method]; ok {
		return answer{}, codeError(service.InvalidArgument, "method %q cannot be sent: %s", method, why)
	}
	params, err := jsonObjectBytes("params_json", r.Params)
	if err != nil {
		return answer{}, err
	}
	if params == nil {
		params = json.RawMessage("{}") // "empty means {}"
	}
	if method == methodToolsCall {
		return s.sendToolCall(ctx, r.Server, params, r.Options, emit)
	}
	base, copts, err := s.settings(ctx, r.Options)
	if err != nil {
		return answer{}, err
	}
	rs, err := s.profileGate(ctx, r.Server)
	if err != nil {
		return answer{}, err
	}
	if hidden := hiddenItem(rs, method, params); hidden != nil {
		return answer{hidden: hidden}, nil
	}
	base.Method = method
	base.Params = params
	return s.callRelayed(ctx, r.Server, base, copts, rs, emit)
}

// GetPrompt gets one prompt.
func (s *Server) GetPrompt(ctx context.Context, req *mcpdv1.GetPromptRequest) (*mcpdv1.McpResponse, error) {
	if req.GetServer() == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	if req.GetName() == "" {
		return nil, codeError(service.InvalidArgument, "prompt name required")
	}
	args, err := jsonObject("arguments_json", req.GetArgumentsJson())
	if err != nil {
		return nil, err
	}
	if args != nil {
		// prompts/get params: "arguments?: {string: string}".
		var m map[string]string
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, codeError(service.InvalidArgument, "invalid arguments_json: values must be strings")
		}
	}
	inputResponses, err := jsonObject("input_responses_json", req.GetInputResponsesJson())
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(struct {
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   string          `json:"requestState,omitempty"`
	}{req.GetName(), args, inputResponses, req.GetRequestState()})
	if err != nil {
		return nil, codeError(service.Internal, "encode prompts/get params: %v", err)
	}
	return s.unaryCall(ctx, req.GetServer(), "prompts/get", params, req.GetOptions())
}

// ReadResource reads one resource.
func (s *Server) ReadResource(ctx context.Context, req *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	a, err := s.read(ctx, service.Read{Server: req.GetServer(), URI: req.GetUri(),
		InputResponses: stringBytes(req.GetInputResponsesJson()), RequestState: req.GetRequestState(), Options: o})
	if err != nil {
		return nil, err
	}
	return a.toProto(req.GetServer()), nil
}

// read validates a resources/read and makes it.
func (s *Server) read(ctx context.Context, r service.Read) (answer, error) {
	if r.Server == "" {
		return answer{}, codeError(service.InvalidArgument, "server name required")
	}
	if r.URI == "" {
		return answer{}, codeError(service.InvalidArgument, "resource uri required")
	}
	inputResponses, err := jsonObjectBytes("input_responses_json", r.InputResponses)
	if err != nil {
		return answer{}, err
	}
	params, err := json.Marshal(struct {
		URI            string          `json:"uri"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   string          `json:"requestState,omitempty"`
	}{r.URI, inputResponses, r.RequestState})
	if err != nil {
		return answer{}, codeError(service.Internal, "encode resources/read params: %v", err)
	}
	return s.call(ctx, r.Server, "resources/read", params, r.Options)
}

// Complete asks a server for argument completions.
func (s *Server) Complete(ctx context.Context, req *mcpdv1.CompleteRequest) (*mcpdv1.McpResponse, error) {
	if req.GetServer() == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	params, err := jsonObject("params_json", req.GetParamsJson())
	if err != nil {
		return nil, err
	}
	if params == nil {
		// completion/complete requires "ref" and "argument".
		return nil, codeError(service.InvalidArgument, "params_json required")
	}
	return s.unaryCall(ctx, req.GetServer(), "completion/complete", params, req.GetOptions())
}

// unaryCall forwards one request of a gRPC app and waits for its
// response.
func (s *Server) unaryCall(ctx context.Context, server, method string, params json.RawMessage, opts *mcpdv1.CallOptions) (*mcpdv1.McpResponse, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	a, err := s.call(ctx, server, method, params, o)
	if err != nil {
		return nil, err
	}
	return a.toProto(server), nil
}

// call forwards one request under the call's profile and waits for its
// answer.
func (s *Server) call(ctx context.Context, server, method string, params json.RawMessage, o service.Options) (answer, error) {
	req, copts, err := s.settings(ctx, o)
	if err != nil {
		return answer{}, err
	}
	rs, err := s.profileGate(ctx, server)
	if err != nil {
		return answer{}, err
	}
	if hidden := hiddenItem(rs, method, params); hidden != nil {
		return answer{hidden: hidden}, nil
	}
	req.Method = method
	req.Params = params
	start := time.Now()
	resp, src, err := s.callCached(ctx, server, req, copts)
	if err != nil {
		s.logCallError(ctx, server, method, err)
		return answer{}, toError(err)
	}
	if resp == nil {
		return answer{}, codeError(service.Internal, "%s on %q: no response", method, server)
	}
	return answer{resp: resp, src: src, d: time.Since(start)}, nil
}

// answer is the outcome of a call that reached its server, or hidden,
// the answer for an item the call's profile hides.
type answer struct {
	resp   *session.Response
	src    cache.Source
	d      time.Duration
	hidden *session.RPCError
}

// streamCall forwards one request and streams its progress notifications,
// then its response, to a gRPC app.
func (s *Server) streamCall(stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent], server string, req *session.Request, copts supervisor.CallOptions, rs *profile.Server) error {
	a, err := s.callRelayed(stream.Context(), server, req, copts, rs, streamEmitter(stream))
	if err != nil {
		return err
	}
	return sendAnswer(stream, server, a)
}

// streamEmitter sends a call's progress and log messages on a gRPC stream.
func streamEmitter(stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) func(relayItem) error {
	return func(p relayItem) error {
		ev := &mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: string(p.params)}}
		if p.message {
			ev.Event = &mcpdv1.CallToolEvent_MessageJson{MessageJson: string(p.params)}
		}
		return stream.Send(ev)
	}
}

// sendAnswer sends a call's answer, its last event, on a gRPC stream.
func sendAnswer(stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent], server string, a answer) error {
	return stream.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{Response: a.toProto(server)}})
}

// toProto is a's response to a call of server, as mcpd.v1 sends it.
func (a answer) toProto(server string) *mcpdv1.McpResponse {
	if a.hidden != nil {
		return &mcpdv1.McpResponse{Server: server, Error: mcpErrorToProto(a.hidden)}
	}
	return toMcpResponse(server, a.resp, a.src, a.d)
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
func (s *Server) callRelayed(ctx context.Context, server string, req *session.Request, copts supervisor.CallOptions, rs *profile.Server, emit func(relayItem) error) (answer, error) {
	r := &progressRelay{log: s.log, emit: emit, server: server}
	req.OnProgress = r.push
	req.OnMessage = r.pushMessage

	start := time.Now()
	resp, src, err := s.callCached(ctx, server, req, copts)
	r.finish()
	if err != nil {
		s.logCallError(ctx, server, req.Method, err)
		return answer{}, toError(err)
	}
	if resp == nil {
		return answer{}, codeError(service.Internal, "%s on %q: no response", req.Method, server)
	}
	if resp, err = filterListResult(rs, req.Method, resp); err != nil {
		return answer{}, err
	}
	return answer{resp: resp, src: src, d: time.Since(start)}, nil
}

// sendHidden answers a request for an item the call's profile hides.
func sendHidden(stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent], server string, e *session.RPCError) error {
	return stream.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{
		Response: &mcpdv1.McpResponse{Server: server, Error: mcpErrorToProto(e)},
	}})
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
func (s *Server) logCallError(ctx context.Context, server, method string, err error) {
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
	ch      chan relayItem
	dropped atomic.Int64
}

// relayItem is one queued notification of a call.
type relayItem struct {
	params  json.RawMessage
	message bool // notifications/message, else notifications/progress
}

func newProgressQueue(n int) *progressQueue {
	return &progressQueue{ch: make(chan relayItem, n)}
}

// push is the session's OnProgress callback.
func (q *progressQueue) push(params json.RawMessage) { q.pushItem(params, false) }

// pushItem queues a copy of params.
func (q *progressQueue) pushItem(params json.RawMessage, message bool) {
	p := relayItem{params: append(json.RawMessage(nil), params...), message: message} // the session may reuse its buffer
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
