package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// watchMcpd serves Subscribe from a fixed list of events, then ends the
// stream with end, or, with hold, keeps it open until the app cancels.
type watchMcpd struct {
	mcpdv1.UnimplementedMcpdServer
	events []*mcpdv1.SubscriptionEvent
	end    error
	hold   bool

	mu  sync.Mutex // guards req
	req *mcpdv1.SubscribeRequest
}

func (f *watchMcpd) Subscribe(req *mcpdv1.SubscribeRequest, stream grpc.ServerStreamingServer[mcpdv1.SubscriptionEvent]) error {
	f.mu.Lock()
	f.req = req
	f.mu.Unlock()
	for _, ev := range f.events {
		if err := stream.Send(ev); err != nil {
			return err
		}
	}
	if f.hold {
		<-stream.Context().Done()
		return stream.Context().Err()
	}
	return f.end
}

func (f *watchMcpd) request() *mcpdv1.SubscribeRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.req
}

const watchMs = 1_700_000_000_123

// watchClock is how watch prints the time of the events below.
var watchClock = time.UnixMilli(watchMs).Format("15:04:05.000")

func watchEvent(kind mcpdv1.SubscriptionEventKind, ev *mcpdv1.SubscriptionEvent) *mcpdv1.SubscriptionEvent {
	ev.Kind, ev.TimeUnixMs = kind, watchMs
	return ev
}

func watchAck() *mcpdv1.SubscriptionEvent {
	return watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK, &mcpdv1.SubscriptionEvent{
		Ack: &mcpdv1.SubscriptionAck{SubscriptionId: 7, Servers: []*mcpdv1.SubscriptionServerAck{
			{Server: "demo", Era: "modern", ToolsListChanged: true, ServerState: true, ResourceUris: []string{"demo://counter"}},
			{Server: "mem", Error: `server "mem" is stopped`},
		}},
	})
}

// Every kind of event is one line; dropped log messages are counted and
// watching goes on; a lagged stream ends watch with exit status 1 and a
// hint to resync.
func TestWatchPrintsEventsUntilLagged(t *testing.T) {
	f := &watchMcpd{events: []*mcpdv1.SubscriptionEvent{
		watchAck(),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED, &mcpdv1.SubscriptionEvent{Server: "demo"}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED, &mcpdv1.SubscriptionEvent{Server: "demo", Uri: "demo://counter"}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE, &mcpdv1.SubscriptionEvent{Server: "demo", State: "exited", Pid: 42, Exit: "signal: killed", Error: "server exited unexpectedly"}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESTARTED, &mcpdv1.SubscriptionEvent{Server: "demo", Pid: 43}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_PROMPTS_LIST_CHANGED, &mcpdv1.SubscriptionEvent{Server: "demo", Synthetic: true}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOGS_LAGGED, &mcpdv1.SubscriptionEvent{Server: "demo", DroppedLogMessages: 96}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE, &mcpdv1.SubscriptionEvent{Server: "demo", ParamsJson: `{"level":"info","data":"hi"}`}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE, &mcpdv1.SubscriptionEvent{Server: "demo", State: "crashloop", Error: "too many exits"}),
		watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LAGGED, &mcpdv1.SubscriptionEvent{Error: "too slow"}),
	}}
	sock := mcpdtest.Serve(t, f)
	r := mcpdctl(t, "--socket", sock, "watch", "demo", "mem", "--uri", "demo://counter")
	want := strings.Join([]string{
		`watching demo: tools state demo://counter; mem: unavailable (server "mem" is stopped)`,
		`demo tools changed`,
		`demo updated demo://counter`,
		`demo exited pid 42 (signal: killed)`,
		`demo restarted pid 43 (subscriptions re-sent)`,
		`demo prompts changed (after restart)`,
		`demo logs lagged: 96 log messages dropped (read too slowly)`,
		`demo log {"level":"info","data":"hi"}`,
		`demo crashloop: too many exits`,
		`lagged: too slow`,
	}, "\n"+watchClock+" ")
	if r.stdout != watchClock+" "+want+"\n" {
		t.Errorf("stdout:\n%s\nwant:\n%s %s", r.stdout, watchClock, want)
	}
	if r.code != exitFailure || r.stderr != "mcpdctl: mcpd ended the subscription (events were lost: run watch again to resync)\n" {
		t.Errorf("exit %d, stderr %q; want 1 and the resync hint", r.code, r.stderr)
	}
	req := f.request()
	if !req.GetToolsListChanged() || !req.GetPromptsListChanged() || !req.GetResourcesListChanged() ||
		!req.GetServerState() || !req.GetLogMessages() ||
		strings.Join(req.GetServers(), ",") != "demo,mem" || strings.Join(req.GetResourceUris(), ",") != "demo://counter" {
		t.Errorf("request = %v, want every kind of demo and mem, and demo://counter", req)
	}
}

// An error event ends watch with exit status 1 and the reason on stderr.
func TestWatchErrorEvent(t *testing.T) {
	reason := `subscription to server "demo" ended: crash-looping`
	f := &watchMcpd{
		events: []*mcpdv1.SubscriptionEvent{watchAck(),
			watchEvent(mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR, &mcpdv1.SubscriptionEvent{Server: "demo", Error: reason})},
		end: status.Error(codes.Unavailable, reason),
	}
	r := mcpdctl(t, "--socket", mcpdtest.Serve(t, f), "watch", "demo")
	if !strings.HasSuffix(r.stdout, watchClock+" error: "+reason+"\n") {
		t.Errorf("stdout = %q, want the error event last", r.stdout)
	}
	if r.code != exitFailure || r.stderr != "mcpdctl: "+reason+"\n" {
		t.Errorf("exit %d, stderr %q; want 1 and the reason", r.code, r.stderr)
	}
}

// notifyWriter is a goroutine-safe buffer that signals its first write.
type notifyWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
	once  sync.Once
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.once.Do(func() { close(w.first) })
	return w.buf.Write(p)
}

func (w *notifyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// Ctrl-C (the context ends) stops watch with exit status 0; --json prints
// each event as one JSON object a line.
func TestWatchInterruptedJSON(t *testing.T) {
	f := &watchMcpd{events: []*mcpdv1.SubscriptionEvent{watchAck()}, hold: true}
	sock := mcpdtest.Serve(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := &notifyWriter{first: make(chan struct{})}
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- report(run(ctx, []string{"--socket", sock, "watch", "--json"}, stdout, &stderr), &stderr)
	}()
	<-stdout.first
	cancel()
	if code := <-done; code != exitOK || stderr.Len() != 0 {
		t.Fatalf("exit %d, stderr %q; want 0 and nothing", code, stderr.String())
	}
	var ack struct {
		Kind string `json:"kind"`
		Ack  struct {
			SubscriptionID string `json:"subscription_id"`
		} `json:"ack"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &ack); err != nil || ack.Kind != "SUBSCRIPTION_EVENT_KIND_ACK" || ack.Ack.SubscriptionID != "7" {
		t.Fatalf("stdout %q (%v), want the acknowledgement as one JSON object", stdout.String(), err)
	}
	if req := f.request(); len(req.GetServers()) != 0 {
		t.Errorf("servers = %v, want none (every server)", req.GetServers())
	}
}

// slowStartMcpd is an mcpd whose subscription is not acknowledged until the
// app gives up (a server still starting holds the acknowledgement), and
// whose servers are in the states listed.
type slowStartMcpd struct {
	mcpdv1.UnimplementedMcpdServer
}

func (slowStartMcpd) ListServers(context.Context, *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	return &mcpdv1.ListServersResponse{Servers: []*mcpdv1.ServerStatus{
		{Name: "clean", State: mcpdv1.ServerState_SERVER_STATE_READY, Pid: 41},
		{Name: "other", State: mcpdv1.ServerState_SERVER_STATE_READY, Pid: 42},
		{Name: "slow", State: mcpdv1.ServerState_SERVER_STATE_STARTING},
	}}, nil
}

func (slowStartMcpd) Subscribe(_ *mcpdv1.SubscribeRequest, stream grpc.ServerStreamingServer[mcpdv1.SubscriptionEvent]) error {
	<-stream.Context().Done()
	return stream.Context().Err()
}

// writeChan sends each write on a channel.
type writeChan chan string

func (w writeChan) Write(p []byte) (int, error) {
	w <- string(p)
	return len(p), nil
}

// watch prints the watched servers' current state at once, while mcpd has
// not acknowledged the subscription yet (a server is still starting).
func TestWatchPrintsCurrentStateAtOnce(t *testing.T) {
	sock := mcpdtest.Serve(t, slowStartMcpd{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stdout := make(writeChan, 8)
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- report(run(ctx, []string{"--socket", sock, "watch", "clean", "slow"}, stdout, &stderr), &stderr)
	}()
	var got []string
	for len(got) < 2 {
		select {
		case line := <-stdout:
			got = append(got, line[len("15:04:05.000 "):])
		case code := <-done:
			t.Fatalf("watch exited %d before printing the state (stdout %q, stderr %q)", code, got, stderr.String())
		case <-time.After(10 * time.Second): // a bound on a wait, not a timing
			t.Fatalf("watch printed %q and nothing more while the subscription waits", got)
		}
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d after Ctrl-C, stderr %q", code, stderr.String())
	}
	if want := []string{"clean ready pid 41\n", "slow starting\n"}; !slices.Equal(got, want) {
		t.Errorf("watch printed %q, want %q", got, want)
	}
}
