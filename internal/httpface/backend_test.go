package httpface

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// newDaemon runs a supervisor with one legacy fake child "fake" and an
// api.Server over it, in process, and returns the server and a Backend.
func newDaemon(t *testing.T) (*api.Server, *Backend) {
	t.Helper()
	return newDaemonLogging(t, zaptest.NewLogger(t))
}

// newDaemonLogging is newDaemon logging to log.
func newDaemonLogging(t testing.TB, log *zap.Logger) (*api.Server, *Backend) {
	t.Helper()
	cmd, args := fakemcp.Command()
	var srv *api.Server
	sup := supervisor.New(supervisor.Options{
		Specs: []supervisor.Spec{{Name: "fake", Command: cmd, Args: args, Autostart: true,
			Env: map[string]string{fakemcp.EnvMode: "legacy"}, RequestTimeout: 30 * time.Second}},
		Logger:     log,
		ClientInfo: json.RawMessage(`{"name":"mcpd-test","version":"0"}`),
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			return srv.ServeChildRequest(ctx, server, method, params)
		},
	})
	srv = api.NewServer(sup, api.Options{Logger: log})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- sup.Run(ctx) }()
	be := NewBackend(srv)
	t.Cleanup(func() {
		be.Close()
		cancel()
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("supervisor: %v", err)
		}
	})
	return srv, be
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// callTool sends tools/call name(args) and returns the events.
func callTool(ctx context.Context, be bridge.Backend, name, args string) ([]*mcpdv1.CallToolEvent, error) {
	st, err := be.SendRequest(ctx, &mcpdv1.SendRequestRequest{Server: "fake", Method: "tools/call",
		ParamsJson: `{"_meta":{"progressToken":"t"},"name":"` + name + `","arguments":` + args + `}`})
	if err != nil {
		return nil, err
	}
	var evs []*mcpdv1.CallToolEvent
	for {
		ev, err := st.Recv()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

// resultText is the text of the final response's first content.
func resultText(t *testing.T, evs []*mcpdv1.CallToolEvent) string {
	t.Helper()
	if len(evs) == 0 || evs[len(evs)-1].GetResponse() == nil {
		t.Fatalf("no response among %v", evs)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	if err := json.Unmarshal([]byte(evs[len(evs)-1].GetResponse().GetResultJson()), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("result %q: %v", evs[len(evs)-1].GetResponse().GetResultJson(), err)
	}
	return res.Content[0].Text
}

func TestBackendListAndProgress(t *testing.T) {
	srv, be := newDaemon(t)
	ctx := ctxT(t)
	if be.Down() || be.Ready(ctx) != nil {
		t.Fatal("backend not ready while the daemon runs")
	}
	lt, err := be.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: "fake"})
	if err != nil || len(lt.GetServers()) != 1 || !strings.Contains(lt.GetServers()[0].GetItemsJson(), `"echo"`) {
		t.Fatalf("ListTools = %v, %v", lt, err)
	}
	evs, err := callTool(ctx, be, "progress", `{"count":3}`)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("stream ended with %v, want EOF", err)
	}
	progress := 0
	for _, ev := range evs {
		if ev.GetProgressJson() != "" {
			progress++
		}
	}
	if progress != 3 || resultText(t, evs) != "done" {
		t.Fatalf("events %v: want 3 progress then done", evs)
	}
	// The calls' app is listed as an HTTP client.
	st, err := srv.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil || len(st.GetApps()) != 1 || st.GetApps()[0].GetTransport() != api.TransportHTTP {
		t.Fatalf("status apps = %v, %v", st.GetApps(), err)
	}
	// Errors map as on the gRPC path.
	_, err = be.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: "nope"})
	if e := be.Error(ctx, err, "nope"); e == nil || e.Code != -32602 {
		t.Fatalf("unknown server: %v → %v", err, e)
	}
}

func TestBackendCancelReachesChild(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	cctx, cancel := context.WithCancel(ctx)
	st, err := be.SendRequest(cctx, &mcpdv1.SendRequestRequest{Server: "fake", Method: "tools/call",
		ParamsJson: `{"name":"sleep","arguments":{"ms":60000}}`})
	if err != nil {
		t.Fatal(err)
	}
	// Cancel once the child has the call.
	statsCalls := 0
	waitFor(t, "the sleep call in flight", func() bool {
		statsCalls++
		evs, _ := callTool(ctx, be, "stats", `{}`)
		var stats struct{ Methods map[string]int }
		_ = json.Unmarshal([]byte(resultText(t, evs)), &stats)
		return stats.Methods["tools/call"] > statsCalls // the stats calls and the sleep
	})
	cancel()
	if _, err := st.Recv(); service.CodeOf(err) != service.Canceled {
		t.Fatalf("Recv after cancel = %v, want CANCELED", err)
	}
	waitFor(t, "the child to see notifications/cancelled", func() bool {
		evs, _ := callTool(ctx, be, "stats", `{}`)
		var stats struct{ Cancelled []json.RawMessage }
		_ = json.Unmarshal([]byte(resultText(t, evs)), &stats)
		return len(stats.Cancelled) > 0
	})
}

func TestBackendSubscribe(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sub, err := be.Subscribe(sctx, &mcpdv1.SubscribeRequest{Servers: []string{"fake"}, ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	ack, err := sub.Recv()
	if err != nil || ack.GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK {
		t.Fatalf("first event %v, %v: want the ack", ack, err)
	}
	if _, err := callTool(ctx, be, "changed", `{"kind":"tools"}`); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	for {
		ev, err := sub.Recv()
		if err != nil {
			t.Fatalf("Recv: %v", err)
		}
		if ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED {
			break
		}
	}
	cancel()
	if _, err := sub.Recv(); service.CodeOf(err) != service.Canceled {
		t.Fatalf("Recv after cancel = %v, want CANCELED", err)
	}
}

func TestBackendHostAnswersSampling(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	hs, err := be.Host(hctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: &mcpdv1.HostRegistration{Sampling: true}}}); err != nil {
		t.Fatal(err)
	}
	if m, err := hs.Recv(); err != nil || m.GetRegistered() == nil {
		t.Fatalf("registration answer %v, %v", m, err)
	}
	type outcome struct {
		evs []*mcpdv1.CallToolEvent
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		evs, err := callTool(ctx, be, "sample", `{}`)
		done <- outcome{evs, err}
	}()
	m, err := hs.Recv()
	if err != nil || m.GetCall().GetMethod() != "sampling/createMessage" {
		t.Fatalf("host got %v, %v: want the child's sampling request", m, err)
	}
	answer := `{"role":"assistant","content":{"type":"text","text":"from the host"},"model":"m"}`
	if err := hs.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Answer{Answer: &mcpdv1.HostAnswer{
		CallId: m.GetCall().GetCallId(), ResultJson: answer}}}); err != nil {
		t.Fatal(err)
	}
	o := <-done
	if !errors.Is(o.err, io.EOF) || !strings.Contains(resultText(t, o.evs), "from the host") {
		t.Fatalf("sample = %v, %v", o.evs, o.err)
	}
	cancel()
	if _, err := hs.Recv(); service.CodeOf(err) != service.Canceled {
		t.Fatalf("Recv after cancel = %v, want CANCELED", err)
	}
}

func TestBackendCloseEndsStreams(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	sub, err := be.Subscribe(ctx, &mcpdv1.SubscribeRequest{Servers: []string{"fake"}, ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sub.Recv(); err != nil {
		t.Fatal(err)
	}
	be.Close()
	if _, err := sub.Recv(); service.CodeOf(err) != service.Unavailable {
		t.Fatalf("Recv after Close = %v, want UNAVAILABLE", err)
	}
	if !be.Down() || be.Ready(ctx) == nil {
		t.Fatal("a closed backend is not down")
	}
	if e := be.Error(ctx, service.Errorf(service.Unavailable, "x"), "fake"); !strings.Contains(e.Message, "stopping") {
		t.Fatalf("Error = %v", e)
	}
}

// waitFor polls cond until it holds, failing after 20s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A call that passed the running check just before Close makes its app
// after Close: that app is closed at once, not left listed in status.
func TestBackendFallbackAfterCloseIsNotListed(t *testing.T) {
	srv, be := newDaemon(t)
	ctx := ctxT(t)
	be.Close()
	if a := be.app(ctx); a == nil {
		t.Fatal("no app for a call after Close")
	}
	st, err := srv.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil || len(st.GetApps()) != 0 {
		t.Fatalf("status apps after Close = %v, %v; want none", st.GetApps(), err)
	}
}
