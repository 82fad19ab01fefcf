package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// fakeMCPD is mcpd in memory with two servers: alpha (tools echo,
// progress and slow, which blocks until cancelled; prompt greet; resource
// res://alpha/a) and beta (tool where, whose region argument has
// x-mcp-header Region).
type fakeMCPD struct {
	cancelled chan string // tools whose call was cancelled upstream
	started   chan string // slow calls started

	mu   sync.Mutex // guards subs
	subs map[chan *mcpdv1.SubscriptionEvent]bool
}

func newFakeMCPD() *fakeMCPD {
	return &fakeMCPD{cancelled: make(chan string, 16), started: make(chan string, 16), subs: map[chan *mcpdv1.SubscriptionEvent]bool{}}
}

var fakeTools = map[string]string{
	"alpha": `[{"name":"echo","inputSchema":{"type":"object"}},{"name":"progress","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}}]`,
	"beta":  `[{"name":"where","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]`,
}

func (f *fakeMCPD) ListServers(context.Context, *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	var out []*mcpdv1.ServerStatus
	for _, n := range []string{"alpha", "beta"} {
		out = append(out, &mcpdv1.ServerStatus{
			Name: n, State: mcpdv1.ServerState_SERVER_STATE_READY, Era: "legacy",
			CapabilitiesJson: `{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true}}`,
			ServerInfoJson:   `{"name":"` + n + `","version":"1"}`,
		})
	}
	return &mcpdv1.ListServersResponse{Servers: out}, nil
}

func (f *fakeMCPD) ListTools(_ context.Context, r *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	return &mcpdv1.ListToolsResponse{Servers: []*mcpdv1.ServerList{{Server: r.GetServer(), ItemsJson: fakeTools[r.GetServer()]}}}, nil
}

func (f *fakeMCPD) ListPrompts(_ context.Context, r *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	items := `[]`
	if r.GetServer() == "alpha" {
		items = `[{"name":"greet"}]`
	}
	return &mcpdv1.ListPromptsResponse{Servers: []*mcpdv1.ServerList{{Server: r.GetServer(), ItemsJson: items}}}, nil
}

func (f *fakeMCPD) ListResources(_ context.Context, r *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	items := `[]`
	if r.GetServer() == "alpha" {
		items = `[{"uri":"res://alpha/a","name":"a"}]`
	}
	return &mcpdv1.ListResourcesResponse{Servers: []*mcpdv1.ServerList{{Server: r.GetServer(), ItemsJson: items}}}, nil
}

func (f *fakeMCPD) ListResourceTemplates(_ context.Context, r *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	return &mcpdv1.ListResourceTemplatesResponse{Servers: []*mcpdv1.ServerList{{Server: r.GetServer(), ItemsJson: `[]`}}}, nil
}

func (f *fakeMCPD) ReadResource(_ context.Context, r *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	if r.GetUri() != "res://alpha/a" {
		return &mcpdv1.McpResponse{Error: &mcpdv1.McpError{Code: -32002, Message: "resource not found"}}, nil
	}
	return &mcpdv1.McpResponse{Server: r.GetServer(), ResultJson: `{"contents":[{"uri":"res://alpha/a","text":"A"}]}`}, nil
}

func (f *fakeMCPD) UpdateSubscription(context.Context, *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error) {
	return &mcpdv1.UpdateSubscriptionResponse{}, nil
}

func (f *fakeMCPD) SendRequest(ctx context.Context, r *mcpdv1.SendRequestRequest) (RecvStream[mcpdv1.CallToolEvent], error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal([]byte(r.GetParamsJson()), &p)
	respond := func(result string) *mcpdv1.CallToolEvent {
		return &mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{Response: &mcpdv1.McpResponse{Server: r.GetServer(), ResultJson: result}}}
	}
	text := func(s string) string {
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": s}}})
		return string(b)
	}
	switch {
	case r.GetMethod() == "prompts/get":
		return &sliceStream[mcpdv1.CallToolEvent]{items: []*mcpdv1.CallToolEvent{respond(`{"messages":[{"role":"user","content":{"type":"text","text":"hello"}}]}`)}}, nil
	case r.GetMethod() != "tools/call":
		return &sliceStream[mcpdv1.CallToolEvent]{items: []*mcpdv1.CallToolEvent{{Event: &mcpdv1.CallToolEvent_Response{Response: &mcpdv1.McpResponse{
			Error: &mcpdv1.McpError{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}}}}}}, nil
	case p.Name == "slow":
		f.started <- "slow"
		return &blockStream{ctx: ctx, f: f}, nil
	case p.Name == "progress":
		var evs []*mcpdv1.CallToolEvent
		for i := 1; i <= 2; i++ {
			prog, _ := json.Marshal(map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "total": 2})
			evs = append(evs, &mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: string(prog)}})
		}
		return &sliceStream[mcpdv1.CallToolEvent]{items: append(evs, respond(text("done")))}, nil
	default:
		return &sliceStream[mcpdv1.CallToolEvent]{items: []*mcpdv1.CallToolEvent{respond(text(string(p.Arguments)))}}, nil
	}
}

// blockStream is a call that answers nothing until cancelled.
type blockStream struct {
	ctx context.Context
	f   *fakeMCPD
}

func (b *blockStream) Recv() (*mcpdv1.CallToolEvent, error) {
	<-b.ctx.Done()
	b.f.cancelled <- "slow"
	return nil, b.ctx.Err()
}

func (f *fakeMCPD) Subscribe(ctx context.Context, _ *mcpdv1.SubscribeRequest) (RecvStream[mcpdv1.SubscriptionEvent], error) {
	ch := make(chan *mcpdv1.SubscriptionEvent, 16)
	f.mu.Lock()
	f.subs[ch] = true
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	})
	return &subStream{ctx: ctx, events: ch}, nil
}

// broadcast sends ev on every open Subscribe stream.
func (f *fakeMCPD) broadcast(ev *mcpdv1.SubscriptionEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

func (f *fakeMCPD) Host(context.Context) (HostStream, error) {
	return nil, errors.New("no host stream")
}
func (f *fakeMCPD) Ready(context.Context) error { return nil }
func (f *fakeMCPD) Down() bool                  { return false }
func (f *fakeMCPD) NotRunning() error           { return errors.New("mcpd is not running") }
func (f *fakeMCPD) Reason(err error) string     { return err.Error() }
func (f *fakeMCPD) Error(_ context.Context, err error, server string) *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s: %v", server, err)
}

// newHTTPTest serves a handler over fake mcpd on a real listener.
func newHTTPTest(t *testing.T) (*fakeMCPD, *HTTPHandler, *httptest.Server) {
	t.Helper()
	f := newFakeMCPD()
	h := NewHTTPHandler(f, HTTPOptions{MaxBody: 1 << 16, Warnf: t.Logf})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return f, h, srv
}

// waitFor waits for ch to give a value.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}
