package bridgegrpc

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// streamMcpd is mcpd's gRPC API answering the bridge's streams: a call of
// "progress" streams a progress event then its response, any other ends
// without a response; a subscription is acknowledged, then given one
// list change; a host registration is confirmed, then asked one call and
// told one notification, and the answer is passed on answers.
type streamMcpd struct {
	mcpdv1.UnimplementedMcpdServer
	answers chan *mcpdv1.HostAnswer
}

func (m *streamMcpd) SendRequest(req *mcpdv1.SendRequestRequest, st grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	if req.GetMethod() != "progress" {
		return nil
	}
	if err := st.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: `{"progress":1}`}}); err != nil {
		return err
	}
	return st.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{Response: &mcpdv1.McpResponse{
		Server: req.GetServer(), ResultJson: req.GetParamsJson(), Cache: mcpdv1.CacheStatus_CACHE_STATUS_HIT}}})
}

func (m *streamMcpd) Subscribe(req *mcpdv1.SubscribeRequest, st grpc.ServerStreamingServer[mcpdv1.SubscriptionEvent]) error {
	ack := &mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK,
		Ack: &mcpdv1.SubscriptionAck{SubscriptionId: 7, Servers: []*mcpdv1.SubscriptionServerAck{{Server: req.GetServers()[0], ToolsListChanged: true}}}}
	if err := st.Send(ack); err != nil {
		return err
	}
	if err := st.Send(&mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED, Server: "s"}); err != nil {
		return err
	}
	<-st.Context().Done()
	return nil
}

func (m *streamMcpd) Host(st grpc.BidiStreamingServer[mcpdv1.HostRequest, mcpdv1.HostResponse]) error {
	if r, err := st.Recv(); err != nil || r.GetRegister() == nil {
		return errors.New("no registration")
	}
	for _, msg := range []*mcpdv1.HostResponse{
		{Msg: &mcpdv1.HostResponse_Registered{Registered: &mcpdv1.HostRegistered{HostId: 1}}},
		{Msg: &mcpdv1.HostResponse_Notification{Notification: &mcpdv1.HostNotification{Server: "s", Method: "notifications/x", ParamsJson: `{}`}}},
		{Msg: &mcpdv1.HostResponse_Call{Call: &mcpdv1.HostCall{CallId: 3, Server: "s", Method: "roots/list", ParamsJson: `{}`}}},
	} {
		if err := st.Send(msg); err != nil {
			return err
		}
	}
	r, err := st.Recv()
	if err != nil {
		return err
	}
	m.answers <- r.GetAnswer()
	<-st.Context().Done()
	return nil
}

func dial(t *testing.T) (*Backend, *streamMcpd) {
	t.Helper()
	m := &streamMcpd{answers: make(chan *mcpdv1.HostAnswer, 1)}
	be, err := Dial(mcpdtest.Serve(t, m), func() error { return errors.New("mcpd is not running") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be, m
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

var _ bridge.Backend = (*Backend)(nil)

// Send passes the stream's events to onEvent and returns its response; a
// stream that ends without one gives none.
func TestSend(t *testing.T) {
	be, _ := dial(t)
	ctx := testCtx(t)
	var evs []service.Event
	resp, err := be.Send(ctx, service.Request{Server: "s", Method: "progress", Params: json.RawMessage(`{"a":1}`)},
		func(ev service.Event) { evs = append(evs, ev) })
	if err != nil {
		t.Fatal(err)
	}
	want := []service.Event{{Kind: service.Progress, Params: json.RawMessage(`{"progress":1}`)}}
	if d := cmp.Diff(want, evs); d != "" {
		t.Errorf("events (-want +got)\n%s", d)
	}
	if resp == nil || resp.Server != "s" || string(resp.Result) != `{"a":1}` || resp.Cache != service.Hit {
		t.Errorf("response %+v", resp)
	}
	if resp, err := be.Send(ctx, service.Request{Server: "s", Method: "other"}, func(service.Event) {}); resp != nil || err != nil {
		t.Errorf("a stream without a response gave %+v, %v", resp, err)
	}
}

// Watch passes the acknowledgement, then the events, until send fails.
func TestWatch(t *testing.T) {
	be, _ := dial(t)
	var got []service.SubscriptionEvent
	err := be.Watch(testCtx(t), service.Watch{Servers: []string{"s"}, ToolsListChanged: true}, func(ev service.SubscriptionEvent) error {
		got = append(got, ev)
		if len(got) == 2 {
			return errors.New("enough")
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Watch ended with %v once send failed", err)
	}
	want := []service.SubscriptionEvent{
		{Kind: service.Ack, Ack: &service.SubscriptionAck{ID: 7, Servers: []service.ServerAck{{Server: "s", ToolsListChanged: true}}}},
		{Kind: service.ToolsListChanged, Server: "s"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got)\n%s", d)
	}
}

// ServeHost registers, passes the notification on, answers the call and
// ends with its context.
func TestServeHost(t *testing.T) {
	be, m := dial(t)
	ctx, cancel := context.WithCancel(testCtx(t))
	registered, notified := make(chan struct{}), make(chan string, 1)
	served := make(chan error, 1)
	go func() { // owned: its end is waited for below
		served <- be.ServeHost(ctx, service.HostRegistration{Roots: true}, func() { close(registered) },
			func(_ context.Context, server, method string, _ json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
				return json.RawMessage(`{"roots":[]}`), nil
			}, func(server, method string, _ json.RawMessage) { notified <- server + " " + method })
	}()
	<-registered
	if got := <-notified; got != "s notifications/x" {
		t.Errorf("notified %q", got)
	}
	if a := <-m.answers; a.GetCallId() != 3 || a.GetResultJson() != `{"roots":[]}` || a.GetError() != nil {
		t.Errorf("answer %v", a)
	}
	cancel()
	if err := <-served; err == nil {
		t.Error("ServeHost ended without the stream's error")
	}
}
