// Package tracing traces the requests apps make through mcpd with
// OpenTelemetry: a server span per app request (child of the W3C trace
// context the app sent, in gRPC metadata or the request's _meta), a child
// span for the result cache on cacheable methods and a client span for the
// request sent to the MCP server, whose trace context goes to the child in
// the request's params._meta ("traceparent", "tracestate"), as MCP's trace
// context convention says. Span names and attributes follow
// OpenTelemetry's semantic conventions for MCP: "{mcp.method.name}
// {target}", mcp.method.name, gen_ai.tool.name, gen_ai.prompt.name,
// mcp.resource.uri, error.type, rpc.response.status_code.
package tracing

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// ScopeName is the instrumentation scope of mcpd's spans.
const ScopeName = "github.com/mcpd-dev/mcpd"

// Attribute keys (OpenTelemetry semantic conventions for MCP and GenAI,
// and mcpd's own).
const (
	attrMethod      = "mcp.method.name"
	attrToolName    = "gen_ai.tool.name"
	attrPromptName  = "gen_ai.prompt.name"
	attrOperation   = "gen_ai.operation.name"
	attrResourceURI = "mcp.resource.uri"
	attrErrorType   = "error.type"
	attrStatusCode  = "rpc.response.status_code"
	attrServer      = "mcpd.server"
	attrCache       = "mcpd.cache.result"
)

// Tracer creates mcpd's spans. Its methods are safe for concurrent use.
type Tracer struct {
	tr   trace.Tracer
	prop propagation.TraceContext
}

// New returns a tracer that creates its spans with tp.
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tr: tp.Tracer(ScopeName)}
}

// target is what a request acts on, from its params.
type target struct {
	Name string          `json:"name"`
	URI  string          `json:"uri"`
	Meta json.RawMessage `json:"_meta"`
}

func parseTarget(params json.RawMessage) target {
	var t target
	if len(params) > 0 {
		_ = json.Unmarshal(params, &t)
	}
	return t
}

// attrs are the span attributes of a request to server.
func attrs(server, method string, t target) []attribute.KeyValue {
	kv := []attribute.KeyValue{attribute.String(attrMethod, method), attribute.String(attrServer, server)}
	switch method {
	case "tools/call":
		kv = append(kv, attribute.String(attrToolName, t.Name), attribute.String(attrOperation, "execute_tool"))
	case "prompts/get":
		kv = append(kv, attribute.String(attrPromptName, t.Name))
	case "resources/read":
		kv = append(kv, attribute.String(attrResourceURI, t.URI))
	}
	return kv
}

// spanName is "{mcp.method.name} {target}" where there is a target.
func spanName(method string, t target) string {
	switch {
	case t.Name != "" && (method == "tools/call" || method == "prompts/get"):
		return method + " " + t.Name
	case t.URI != "" && method == "resources/read":
		return method + " " + t.URI
	}
	return method
}

// metaCarrier reads and writes traceparent/tracestate in a _meta object.
type metaCarrier map[string]string

func (c metaCarrier) Get(k string) string { return c[k] }
func (c metaCarrier) Set(k, v string)     { c[k] = v }
func (c metaCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// mdCarrier reads gRPC incoming metadata.
type mdCarrier metadata.MD

func (c mdCarrier) Get(k string) string {
	if v := metadata.MD(c).Get(k); len(v) > 0 {
		return v[0]
	}
	return ""
}
func (c mdCarrier) Set(string, string) {}
func (c mdCarrier) Keys() []string {
	out := make([]string, 0, len(c))
	for k := range c {
		out = append(out, k)
	}
	return out
}

// incoming returns ctx with the app's trace context: gRPC metadata first,
// then the request's _meta.
func (t *Tracer) incoming(ctx context.Context, tg target) context.Context {
	if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("traceparent")) > 0 {
		return t.prop.Extract(ctx, mdCarrier(md))
	}
	if len(tg.Meta) > 0 {
		var m map[string]any
		if json.Unmarshal(tg.Meta, &m) == nil {
			c := metaCarrier{}
			for _, k := range []string{"traceparent", "tracestate"} {
				if s, ok := m[k].(string); ok {
					c[k] = s
				}
			}
			if c["traceparent"] != "" {
				return t.prop.Extract(ctx, c)
			}
		}
	}
	return ctx
}

// StartRequest implements api.Tracer: the server span of one app request.
func (t *Tracer) StartRequest(ctx context.Context, server string, req *session.Request) (context.Context, func(*session.Response, cache.Source, error)) {
	tg := parseTarget(req.Params)
	ctx = t.incoming(ctx, tg)
	start := time.Now()
	ctx, span := t.tr.Start(ctx, spanName(req.Method, tg), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attrs(server, req.Method, tg)...), trace.WithTimestamp(start))
	return ctx, func(resp *session.Response, src cache.Source, err error) {
		if _, ok := cache.KindOf(req.Method); ok {
			_, cs := t.tr.Start(ctx, "mcpd.cache "+req.Method, trace.WithSpanKind(trace.SpanKindInternal),
				trace.WithTimestamp(start), trace.WithAttributes(attribute.String(attrCache, cacheResult(src))))
			cs.End()
		}
		span.SetAttributes(attribute.String(attrCache, cacheResult(src)))
		setOutcome(span, resp, err)
		span.End()
	}
}

// Upstream is the supervisor's Options.Upstream: the client span of the
// request sent to the child, whose trace context goes in params._meta.
func (t *Tracer) Upstream(ctx context.Context, server string, req *session.Request) (*session.Request, func(*session.Response, error)) {
	tg := parseTarget(req.Params)
	ctx, span := t.tr.Start(ctx, spanName(req.Method, tg), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attrs(server, req.Method, tg)...))
	if params, ok := injectMeta(ctx, t.prop, req.Params); ok {
		r := *req
		r.Params = params
		req = &r
	}
	return req, func(resp *session.Response, err error) {
		setOutcome(span, resp, err)
		span.End()
	}
}

// injectMeta returns params with the span context of ctx in _meta.
func injectMeta(ctx context.Context, prop propagation.TraceContext, params json.RawMessage) (json.RawMessage, bool) {
	c := metaCarrier{}
	prop.Inject(ctx, c)
	if c["traceparent"] == "" {
		return nil, false
	}
	top := map[string]json.RawMessage{}
	if len(params) > 0 && string(params) != "null" {
		if json.Unmarshal(params, &top) != nil {
			return nil, false
		}
	}
	meta := map[string]json.RawMessage{}
	if m, ok := top["_meta"]; ok && json.Unmarshal(m, &meta) != nil {
		return nil, false
	}
	for k, v := range c {
		b, _ := json.Marshal(v)
		meta[k] = b
	}
	mb, err := json.Marshal(meta)
	if err != nil {
		return nil, false
	}
	top["_meta"] = mb
	out, err := json.Marshal(top)
	return out, err == nil
}

// setOutcome records a request's error on span.
func setOutcome(span trace.Span, resp *session.Response, err error) {
	switch {
	case err != nil:
		st, _ := status.FromError(err)
		span.SetAttributes(attribute.String(attrErrorType, st.Code().String()))
		span.SetStatus(codes.Error, err.Error())
	case resp != nil && resp.Error != nil:
		code := strconv.FormatInt(resp.Error.Code, 10)
		span.SetAttributes(attribute.String(attrErrorType, code), attribute.String(attrStatusCode, code))
		span.SetStatus(codes.Error, resp.Error.Message)
	}
}

func cacheResult(src cache.Source) string {
	switch src {
	case cache.SourceHit:
		return "hit"
	case cache.SourceCoalesced:
		return "coalesced"
	}
	return "miss"
}
