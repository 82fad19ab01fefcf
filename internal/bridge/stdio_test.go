package bridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// bridgeMcpd is a scripted mcpd for the bridge: one modern server "s" that
// offers resource subscriptions and logging, a Subscribe stream the test
// feeds, and a Host stream through which SendRequest asks the host for the
// roots before answering a tools/call.
type bridgeMcpd struct {
	mcpdv1.UnimplementedMcpdServer

	events chan *mcpdv1.SubscriptionEvent // sent on the Subscribe stream
	host   chan mcpdv1.Mcpd_HostServer    // the registered Host stream
	calls  chan string                    // SendRequest methods, as they arrive

	mu    sync.Mutex // guards order
	order []string   // "update" and "call", as they completed or arrived
}

// startBridgeMcpd serves a bridgeMcpd on a socket in a fresh temporary
// directory; the server is stopped when the test ends.
func startBridgeMcpd(t *testing.T) (*bridgeMcpd, string) {
	t.Helper()
	f := &bridgeMcpd{
		events: make(chan *mcpdv1.SubscriptionEvent, 16),
		host:   make(chan mcpdv1.Mcpd_HostServer, 1),
		calls:  make(chan string, 16),
	}
	return f, mcpdtest.Serve(t, f)
}

func (f *bridgeMcpd) record(what string) {
	f.mu.Lock()
	f.order = append(f.order, what)
	f.mu.Unlock()
}

func (f *bridgeMcpd) ListServers(context.Context, *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	return &mcpdv1.ListServersResponse{Servers: []*mcpdv1.ServerStatus{{
		Name: "s", State: mcpdv1.ServerState_SERVER_STATE_READY, Era: "modern", ProtocolVersion: "2026-07-28",
		ServerInfoJson:   `{"name":"s","version":"1.0.0"}`,
		CapabilitiesJson: `{"tools":{},"resources":{"subscribe":true},"logging":{}}`,
	}}}, nil
}

func (f *bridgeMcpd) Subscribe(_ *mcpdv1.SubscribeRequest, stream grpc.ServerStreamingServer[mcpdv1.SubscriptionEvent]) error {
	ack := &mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK,
		Ack: &mcpdv1.SubscriptionAck{SubscriptionId: 7}}
	if err := stream.Send(ack); err != nil {
		return err
	}
	for {
		select {
		case ev := <-f.events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}

// UpdateSubscription takes its time, as starting an upstream subscription
// does: it completes when a call arrives, or after a second.
func (f *bridgeMcpd) UpdateSubscription(ctx context.Context, _ *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error) {
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case m := <-f.calls:
		f.calls <- m
	case <-t.C:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	f.record("update")
	return &mcpdv1.UpdateSubscriptionResponse{}, nil
}

func (f *bridgeMcpd) Host(stream mcpdv1.Mcpd_HostServer) error {
	if m, err := stream.Recv(); err != nil || m.GetRegister() == nil {
		return err
	}
	err := stream.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Registered{Registered: &mcpdv1.HostRegistered{HostId: 1}}})
	if err != nil {
		return err
	}
	f.host <- stream
	<-stream.Context().Done()
	return nil
}

// SendRequest answers a tools/call of "roots" with the host's roots, which
// it asks for with a roots/list without params (as a legacy child sends
// it); any other request with an empty result.
func (f *bridgeMcpd) SendRequest(r *mcpdv1.SendRequestRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	f.record("call")
	f.calls <- r.GetMethod()
	result := `{"content":[]}`
	if strings.Contains(r.GetParamsJson(), `"roots"`) {
		var host mcpdv1.Mcpd_HostServer
		select {
		case host = <-f.host:
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
		call := &mcpdv1.HostCall{CallId: 1, Server: r.GetServer(), Method: "roots/list"}
		if err := host.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Call{Call: call}}); err != nil {
			return err
		}
		m, err := host.Recv()
		if err != nil {
			return err
		}
		text, _ := json.Marshal(m.GetAnswer().GetResultJson())
		result = `{"content":[{"type":"text","text":` + string(text) + `}]}`
	}
	resp := &mcpdv1.McpResponse{Server: r.GetServer(), ResultJson: result}
	return stream.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{Response: resp}})
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
	`"io.modelcontextprotocol/clientCapabilities":{"roots":{}}}`

// A legacy child's roots/list has no params; a modern host gets it as an
// input request with params {} (the Go SDK client cannot decode one
// without), and its answer reaches the child.
func TestBridgeInputRequestWithoutParams(t *testing.T) {
	_, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{` + modernMeta + `,"name":"roots"}}`)
	var first struct {
		Result struct {
			ResultType    string `json:"resultType"`
			RequestState  string `json:"requestState"`
			InputRequests map[string]struct {
				Method string          `json:"method"`
				Params json.RawMessage `json:"params"`
			} `json:"inputRequests"`
		} `json:"result"`
	}
	raw, _ := json.Marshal(h.Response("1"))
	if err := json.Unmarshal(raw, &first); err != nil || first.Result.ResultType != "input_required" || len(first.Result.InputRequests) != 1 {
		t.Fatalf("first answer %s (%v), want input_required with one input request", raw, err)
	}
	var key string
	for k, ir := range first.Result.InputRequests {
		key = k
		if ir.Method != "roots/list" || string(ir.Params) != "{}" {
			t.Errorf("input request %s: method %q params %s, want roots/list with params {}", k, ir.Method, ir.Params)
		}
	}
	state, _ := json.Marshal(first.Result.RequestState)
	h.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + modernMeta + `,"name":"roots",` +
		`"inputResponses":{"` + key + `":{"roots":[{"uri":"file:///w"}]}},"requestState":` + string(state) + `}}`)
	if got := string(h.Response("2")["result"]); !strings.Contains(got, `file:///w`) {
		t.Errorf("retry answered %s, want the child's result with the host's roots", got)
	}
}

// A legacy host that set a level gets the messages a server sends outside
// any request at that level or above, but none that mcpd marks as sent
// during calls (possibly another host's).
func TestBridgeForwardsUnattributedLogMessages(t *testing.T) {
	f, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	h.Response("1")
	h.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.Send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"warning"}}`)
	if m := h.Response("2"); m["error"] != nil {
		t.Fatalf("setLevel: %s", m["error"])
	}
	f.events <- &mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE, Server: "s",
		ParamsJson: `{"level":"error","data":"during calls"}`, DuringCalls: true}
	for _, p := range []string{`{"level":"info","data":"below"}`, `{"level":"error","data":"above"}`} {
		f.events <- &mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE, Server: "s", ParamsJson: p}
	}
	// Events are handled in order: once "above" arrived, the others were dropped.
	m := h.Next("log message", func(m map[string]json.RawMessage) bool { return string(m["method"]) == `"notifications/message"` })
	if got := string(m["params"]); got != `{"level":"error","data":"above"}` {
		t.Errorf("log message %s, want only the error-level one sent outside calls", got)
	}
}

// A request the host sends right after a subscriptions/listen reaches mcpd
// only once the listen is in place, so an update it causes is not lost; a
// cancelled listen is not answered.
func TestBridgeListenBeforeNextRequest(t *testing.T) {
	f, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`)
	h.Response("1")
	h.Send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + modernMeta + `,"notifications":{"resourceSubscriptions":["r://x"]}}}`)
	h.Send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + modernMeta + `,"name":"touch"}}`)
	h.Response("2")
	f.mu.Lock()
	order := strings.Join(f.order, ",")
	f.mu.Unlock()
	if order != "update,call" {
		t.Errorf("mcpd saw %s, want the listen's update before the call", order)
	}
	// A listen the host cancelled is not answered ("Receiver should stop
	// work, free resources and not answer").
	h.Send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L"}}`)
	h.Send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + modernMeta + `,"name":"touch"}}`)
	h.Next("response 3", func(m map[string]json.RawMessage) bool {
		if string(m["id"]) == `"L"` {
			t.Errorf("the cancelled listen was answered: %v", m)
		}
		return string(m["id"]) == "3"
	})
}
