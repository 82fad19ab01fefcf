package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// memBackend is mcpd in memory: one server "s" with one tool, whose calls
// report progress before answering, and a Subscribe stream that delivers
// what events carries.
type memBackend struct {
	events chan *mcpdv1.SubscriptionEvent
}

func (m *memBackend) ListServers(context.Context, *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	return &mcpdv1.ListServersResponse{Servers: []*mcpdv1.ServerStatus{{
		Name: "s", State: mcpdv1.ServerState_SERVER_STATE_READY, Era: "legacy",
		CapabilitiesJson: `{"tools":{"listChanged":true}}`, ServerInfoJson: `{"name":"s","version":"1"}`,
	}}}, nil
}

func (m *memBackend) ListTools(_ context.Context, r *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	return &mcpdv1.ListToolsResponse{Servers: []*mcpdv1.ServerList{{Server: "s", ItemsJson: `[{"name":"echo","inputSchema":{"type":"object"}}]`}}}, nil
}

func (m *memBackend) ListPrompts(context.Context, *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	return &mcpdv1.ListPromptsResponse{}, nil
}

func (m *memBackend) ListResources(context.Context, *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	return &mcpdv1.ListResourcesResponse{}, nil
}

func (m *memBackend) ListResourceTemplates(context.Context, *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	return &mcpdv1.ListResourceTemplatesResponse{}, nil
}

func (m *memBackend) ReadResource(context.Context, *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	return nil, errors.New("no resources")
}

func (m *memBackend) UpdateSubscription(context.Context, *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error) {
	return &mcpdv1.UpdateSubscriptionResponse{}, nil
}

func (m *memBackend) SendRequest(_ context.Context, r *mcpdv1.SendRequestRequest) (RecvStream[mcpdv1.CallToolEvent], error) {
	return &sliceStream[mcpdv1.CallToolEvent]{items: []*mcpdv1.CallToolEvent{
		{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: `{"progressToken":"p","progress":1}`}},
		{Event: &mcpdv1.CallToolEvent_Response{Response: &mcpdv1.McpResponse{Server: "s", ResultJson: `{"content":[]}`}}},
	}}, nil
}

func (m *memBackend) Subscribe(ctx context.Context, _ *mcpdv1.SubscribeRequest) (RecvStream[mcpdv1.SubscriptionEvent], error) {
	return &subStream{ctx: ctx, events: m.events}, nil
}

func (m *memBackend) Host(context.Context) (HostStream, error) {
	return nil, errors.New("no host stream")
}

func (m *memBackend) Ready(context.Context) error { return nil }
func (m *memBackend) Down() bool                  { return false }
func (m *memBackend) NotRunning() error           { return errors.New("mcpd is not running") }
func (m *memBackend) Reason(err error) string     { return err.Error() }

func (m *memBackend) Error(_ context.Context, err error, server string) *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s: %v", server, err)
}

// sliceStream yields items, then io.EOF.
type sliceStream[T any] struct{ items []*T }

func (s *sliceStream[T]) Recv() (*T, error) {
	if len(s.items) == 0 {
		return nil, io.EOF
	}
	it := s.items[0]
	s.items = s.items[1:]
	return it, nil
}

// subStream acknowledges, then yields events until its context ends.
type subStream struct {
	ctx    context.Context
	events chan *mcpdv1.SubscriptionEvent
	acked  bool
}

func (s *subStream) Recv() (*mcpdv1.SubscriptionEvent, error) {
	if !s.acked {
		s.acked = true
		return &mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK, Ack: &mcpdv1.SubscriptionAck{SubscriptionId: 1}}, nil
	}
	select {
	case ev := <-s.events:
		return ev, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

// scopedMsg is one message the sink got, with its scope.
type scopedMsg struct {
	scope string
	msg   jsonrpc.Message
}

// recordSink passes each message on got.
type recordSink struct{ got chan scopedMsg }

func (r *recordSink) Send(scope json.RawMessage, m *jsonrpc.Message) error {
	r.got <- scopedMsg{scope: string(scope), msg: *m}
	return nil
}

// next waits for the sink's next message.
func (r *recordSink) next(t *testing.T) scopedMsg {
	t.Helper()
	select {
	case m := <-r.got:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message from the bridge")
		return scopedMsg{}
	}
}

// The sink tells a request's output (its progress and its answer) from
// unsolicited output (a list change).
func TestSinkScopes(t *testing.T) {
	be := &memBackend{events: make(chan *mcpdv1.SubscriptionEvent)}
	sink := &recordSink{got: make(chan scopedMsg, 16)}
	send, stop := serveHost(t, be, sink)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`)
	if m := sink.next(t); m.scope != "1" || m.msg.Result == nil {
		t.Fatalf("initialize answered %s %s in scope %q", m.msg.Result, m.msg.Error, m.scope)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"echo","arguments":{},"_meta":{"progressToken":"p"}}}`)
	for _, want := range []string{"notifications/progress", ""} {
		m := sink.next(t)
		if m.scope != `"c"` || m.msg.Method != want {
			t.Errorf("got %s %s in scope %q, want %q in scope \"c\"", m.msg.Method, m.msg.Result, m.scope, want)
		}
	}
	be.events <- &mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED, Server: "s", ParamsJson: `{}`}
	if m := sink.next(t); m.scope != "" || m.msg.Method != "notifications/tools/list_changed" {
		t.Errorf("list change %s sent in scope %q, want unsolicited", m.msg.Method, m.scope)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// serveHost runs a bridge of server "s" over be, its messages to sink;
// send writes a line of the host, stop closes the host's side and returns
// what the bridge ended with.
func serveHost(t *testing.T, be Backend, sink Sink) (send func(line string), stop func() error) {
	in, host := io.Pipe()
	var wg sync.WaitGroup
	var serveErr error
	wg.Go(func() {
		serveErr = serveLines(context.Background(), be, Options{
			Names: []string{"s"}, MaxLine: 1 << 20,
			Warnf:       func(string, ...any) {},
			RPCError:    func(_ context.Context, err error, _ string) error { return err },
			CallOptions: func() *mcpdv1.CallOptions { return &mcpdv1.CallOptions{} },
		}, in, sink, nil)
	})
	send = func(line string) {
		t.Helper()
		if _, err := fmt.Fprintln(host, line); err != nil {
			t.Fatal(err)
		}
	}
	stop = func() error {
		host.Close()
		wg.Wait()
		return serveErr
	}
	return send, stop
}
