package tracing

import (
	"context"
	"encoding/json"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const appTraceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

func newTestTracer() (*Tracer, *tracetest.InMemoryExporter) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	return New(tp), exp
}

// One request: a server span in the app's trace, with the upstream client
// span as its child, and the child's request carries the trace in _meta.
func TestRequestSpanAndUpstreamChild(t *testing.T) {
	for _, via := range []string{"metadata", "_meta"} {
		t.Run(via, func(t *testing.T) {
			tr, exp := newTestTracer()
			ctx := context.Background()
			params := `{"name":"echo","arguments":{"a":1}}`
			if via == "metadata" {
				ctx = metadata.NewIncomingContext(ctx, metadata.Pairs("traceparent", appTraceparent))
			} else {
				params = `{"name":"echo","arguments":{"a":1},"_meta":{"traceparent":"` + appTraceparent + `"}}`
			}
			req := &session.Request{Method: "tools/call", Params: json.RawMessage(params)}
			ctx, end := tr.StartRequest(ctx, "fk", req)
			sent, done := tr.Upstream(ctx, "fk", req)
			done(&session.Response{Result: json.RawMessage(`{}`)}, nil)
			end(&session.Response{Result: json.RawMessage(`{}`)}, cache.SourceFetched, nil)

			var p struct {
				Meta      map[string]string `json:"_meta"`
				Arguments json.RawMessage   `json:"arguments"`
			}
			if err := json.Unmarshal(sent.Params, &p); err != nil {
				t.Fatal(err)
			}
			tp, err := trace.TraceIDFromHex("0af7651916cd43dd8448eb211c80319c")
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Meta["traceparent"]; len(got) != 55 || got[3:35] != tp.String() || got == appTraceparent {
				t.Fatalf("child's traceparent %q: want the app's trace id with mcpd's span", got)
			}
			if string(p.Arguments) != `{"a":1}` {
				t.Fatalf("arguments changed: %s", p.Arguments)
			}
			spans := exp.GetSpans()
			if len(spans) != 2 {
				t.Fatalf("%d spans, want server and client", len(spans))
			}
			client, server := spans[0], spans[1]
			if server.Name != "tools/call echo" || server.SpanKind != trace.SpanKindServer || server.SpanContext.TraceID() != tp {
				t.Fatalf("server span %q kind %v trace %v", server.Name, server.SpanKind, server.SpanContext.TraceID())
			}
			if client.SpanKind != trace.SpanKindClient || client.Parent.SpanID() != server.SpanContext.SpanID() {
				t.Fatalf("client span is not the server span's child")
			}
			if p.Meta["traceparent"][36:52] != client.SpanContext.SpanID().String() {
				t.Fatalf("child's parent span %s, want the client span %s", p.Meta["traceparent"][36:52], client.SpanContext.SpanID())
			}
			attrs := map[string]string{}
			for _, kv := range server.Attributes {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if attrs["mcp.method.name"] != "tools/call" || attrs["gen_ai.tool.name"] != "echo" {
				t.Fatalf("attributes %v", attrs)
			}
		})
	}
}

// A cacheable request gets a cache child span saying hit or miss.
func TestCacheSpan(t *testing.T) {
	tr, exp := newTestTracer()
	req := &session.Request{Method: "resources/read", Params: json.RawMessage(`{"uri":"fake://hello"}`)}
	_, end := tr.StartRequest(context.Background(), "fk", req)
	end(&session.Response{Result: json.RawMessage(`{}`)}, cache.SourceHit, nil)
	spans := exp.GetSpans()
	if len(spans) != 2 || spans[0].Name != "mcpd.cache resources/read" || spans[0].Parent.SpanID() != spans[1].SpanContext.SpanID() {
		t.Fatalf("spans %v", spans)
	}
	if spans[1].Name != "resources/read fake://hello" {
		t.Fatalf("server span %q", spans[1].Name)
	}
}

func TestCheckEndpoint(t *testing.T) {
	for ep, ok := range map[string]bool{"127.0.0.1:4317": true, "localhost:4317": true, "[::1]:4317": true,
		"http://127.0.0.1:4317": true, "10.0.0.1:4317": false, "example.com:4317": false, "127.0.0.1": false} {
		if _, err := CheckEndpoint(ep); (err == nil) != ok {
			t.Errorf("CheckEndpoint(%q) = %v, want ok %v", ep, err, ok)
		}
	}
}
