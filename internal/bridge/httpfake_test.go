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
	"github.com/mcpd-dev/mcpd/internal/service"
)

// fakeMCPD is mcpd in memory with two servers: alpha (tools echo,
// progress and slow, which blocks until cancelled; prompt greet; resource
// res://alpha/a) and beta (tool where, whose region argument has
// x-mcp-header Region).
type fakeMCPD struct {
	cancelled chan string // tools whose call was cancelled upstream
	started   chan string // slow calls started

	mu   sync.Mutex // guards subs
	subs map[chan *service.SubscriptionEvent]bool
}

func newFakeMCPD() *fakeMCPD {
	return &fakeMCPD{cancelled: make(chan string, 16), started: make(chan string, 16), subs: map[chan *service.SubscriptionEvent]bool{}}
}

var fakeTools = map[string]string{
	"alpha": `[{"name":"echo","inputSchema":{"type":"object"}},{"name":"progress","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}}]`,
	"beta":  `[{"name":"where","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]`,
}

func (f *fakeMCPD) ListServers(context.Context) (*service.Servers, error) {
	var out []service.ServerStatus
	for _, n := range []string{"alpha", "beta"} {
		out = append(out, service.ServerStatus{
			Name: n, Era: "legacy",
			Capabilities: json.RawMessage(`{"tools":{"listChanged":true},"prompts":{},"resources":{"subscribe":true}}`),
			ServerInfo:   json.RawMessage(`{"name":"` + n + `","version":"1"}`),
		})
	}
	return &service.Servers{Servers: out}, nil
}

func (f *fakeMCPD) List(_ context.Context, server, method string, _ service.Options) ([]service.ServerList, error) {
	items := `[]`
	switch {
	case method == "tools/list":
		items = fakeTools[server]
	case method == "prompts/list" && server == "alpha":
		items = `[{"name":"greet"}]`
	case method == "resources/list" && server == "alpha":
		items = `[{"uri":"res://alpha/a","name":"a"}]`
	}
	return []service.ServerList{{Server: server, Items: json.RawMessage(items)}}, nil
}

func (f *fakeMCPD) Read(_ context.Context, r service.Read) (*service.Response, error) {
	if r.URI != "res://alpha/a" {
		return &service.Response{Error: &jsonrpc.Error{Code: -32002, Message: "resource not found"}}, nil
	}
	return &service.Response{Server: r.Server, Result: json.RawMessage(`{"contents":[{"uri":"res://alpha/a","text":"A"}]}`)}, nil
}

func (f *fakeMCPD) UpdateWatch(context.Context, service.SubscriptionUpdate) ([]service.ServerAck, error) {
	return nil, nil
}

func (f *fakeMCPD) Send(ctx context.Context, r service.Request, onEvent func(service.Event)) (*service.Response, error) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(r.Params, &p)
	respond := func(result string) *service.Response {
		return &service.Response{Server: r.Server, Result: json.RawMessage(result)}
	}
	text := func(s string) string {
		b, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": s}}})
		return string(b)
	}
	switch {
	case r.Method == "prompts/get":
		return respond(`{"messages":[{"role":"user","content":{"type":"text","text":"hello"}}]}`), nil
	case r.Method != "tools/call":
		return &service.Response{Error: &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "method not found"}}, nil
	case p.Name == "slow":
		// A call that answers nothing until cancelled.
		f.started <- "slow"
		<-ctx.Done()
		f.cancelled <- "slow"
		return nil, ctx.Err()
	case p.Name == "progress":
		for i := 1; i <= 2; i++ {
			prog, _ := json.Marshal(map[string]any{"progressToken": p.Meta.ProgressToken, "progress": i, "total": 2})
			onEvent(service.Event{Kind: service.Progress, Params: prog})
		}
		return respond(text("done")), nil
	default:
		return respond(text(string(p.Arguments))), nil
	}
}

func (f *fakeMCPD) Watch(ctx context.Context, _ service.Watch, send func(service.SubscriptionEvent) error) error {
	ch := make(chan *service.SubscriptionEvent, 16)
	f.mu.Lock()
	f.subs[ch] = true
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.subs, ch)
		f.mu.Unlock()
	}()
	return deliverEvents(ctx, ch, send)
}

// broadcast sends ev on every open subscription.
func (f *fakeMCPD) broadcast(ev *service.SubscriptionEvent) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

func (f *fakeMCPD) ServeHost(context.Context, service.HostRegistration, func(), service.HostAnswerer, service.HostNotifier) error {
	return errors.New("no host registration")
}
func (f *fakeMCPD) Ready(context.Context) error { return nil }
func (f *fakeMCPD) Down() bool                  { return false }
func (f *fakeMCPD) NotRunning() error           { return errors.New("mcpd is not running") }

// newHTTPTest serves a handler over fake mcpd on a real listener.
func newHTTPTest(t *testing.T) (*fakeMCPD, *HTTPHandler, *httptest.Server) {
	t.Helper()
	f := newFakeMCPD()
	h, srv := serveHTTPTest(t, f)
	return f, h, srv
}

// serveHTTPTest serves a handler over be on a real listener.
func serveHTTPTest(t *testing.T, be Backend) (*HTTPHandler, *httptest.Server) {
	t.Helper()
	h := NewHTTPHandler(be, HTTPOptions{MaxBody: 1 << 16, Warnf: t.Logf})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		h.Close()
		srv.Close()
	})
	return h, srv
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
