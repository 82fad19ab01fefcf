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
	"github.com/mcpd-dev/mcpd/internal/service"
)

// memBackend is mcpd in memory: one server "s" with one tool, whose calls
// report progress before answering, and a subscription that delivers what
// events carries.
type memBackend struct {
	events chan *service.SubscriptionEvent
}

func (m *memBackend) ListServers(context.Context) (*service.Servers, error) {
	return &service.Servers{Servers: []service.ServerStatus{{
		Name: "s", Era: "legacy",
		Capabilities: json.RawMessage(`{"tools":{"listChanged":true}}`), ServerInfo: json.RawMessage(`{"name":"s","version":"1"}`),
	}}}, nil
}

func (m *memBackend) List(_ context.Context, _, method string, _ service.Options) ([]service.ServerList, error) {
	if method == "tools/list" {
		return []service.ServerList{{Server: "s", Items: json.RawMessage(`[{"name":"echo","inputSchema":{"type":"object"}}]`)}}, nil
	}
	return nil, nil
}

func (m *memBackend) Read(context.Context, service.Read) (*service.Response, error) {
	return nil, errors.New("no resources")
}

func (m *memBackend) UpdateWatch(context.Context, service.SubscriptionUpdate) ([]service.ServerAck, error) {
	return nil, nil
}

func (m *memBackend) Send(_ context.Context, _ service.Request, onEvent func(service.Event)) (*service.Response, error) {
	onEvent(service.Event{Kind: service.Progress, Params: json.RawMessage(`{"progressToken":"p","progress":1}`)})
	return &service.Response{Server: "s", Result: json.RawMessage(`{"content":[]}`)}, nil
}

func (m *memBackend) Watch(ctx context.Context, _ service.Watch, send func(service.SubscriptionEvent) error) error {
	return deliverEvents(ctx, m.events, send)
}

func (m *memBackend) ServeHost(context.Context, service.HostRegistration, func(), service.HostAnswerer, service.HostNotifier) error {
	return errors.New("no host registration")
}

func (m *memBackend) Ready(context.Context) error { return nil }
func (m *memBackend) Down() bool                  { return false }
func (m *memBackend) NotRunning() error           { return errors.New("mcpd is not running") }

// deliverEvents acknowledges a subscription, then passes it the events
// of events until ctx ends.
func deliverEvents(ctx context.Context, events <-chan *service.SubscriptionEvent, send func(service.SubscriptionEvent) error) error {
	if err := send(service.SubscriptionEvent{Kind: service.Ack, Ack: &service.SubscriptionAck{ID: 1}}); err != nil {
		return nil
	}
	for {
		select {
		case ev := <-events:
			if send(*ev) != nil {
				return nil
			}
		case <-ctx.Done():
			return ctx.Err()
		}
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
	be := &memBackend{events: make(chan *service.SubscriptionEvent)}
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
	be.events <- &service.SubscriptionEvent{Kind: service.ToolsListChanged, Server: "s", Params: json.RawMessage(`{}`)}
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
	return serveHostWith(t, be, sink, Options{Names: []string{"s"}})
}

// serveHostWith is serveHost of a bridge of opts, whose MaxLine, Warnf,
// RPCError and CallOptions a test leaves unset.
func serveHostWith(t *testing.T, be Backend, sink Sink, opts Options) (send func(line string), stop func() error) {
	if opts.MaxLine == 0 {
		opts.MaxLine = 1 << 20
	}
	if opts.Warnf == nil {
		opts.Warnf = func(string, ...any) {}
	}
	opts.RPCError = func(_ context.Context, err error, _ string) error { return err }
	opts.CallOptions = func() service.Options { return service.Options{} }
	in, host := io.Pipe()
	var wg sync.WaitGroup
	var serveErr error
	wg.Go(func() {
		serveErr = serveLines(context.Background(), be, opts, in, sink, nil)
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
