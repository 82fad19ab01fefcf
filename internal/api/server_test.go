package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// fakeBackend is a scripted supervisor. Unset funcs answer
// ErrUnknownServer.
type fakeBackend struct {
	call    func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error)
	list    func(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, error)
	status  []supervisor.Status
	logs    func(name string, n int) ([]transport.Line, error)
	control func(ctx context.Context, verb, name string) (supervisor.Status, error)
	// source is what every call and list reports as its cache source.
	source cache.Source
}

func (f *fakeBackend) CallCached(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, cache.Source, error) {
	if f.call == nil {
		return nil, cache.SourceFetched, fmt.Errorf("call %q: %w", server, supervisor.ErrUnknownServer)
	}
	resp, err := f.call(ctx, server, req, opts)
	return resp, f.source, err
}

func (f *fakeBackend) ListCached(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, cache.Source, error) {
	if f.list == nil {
		return nil, cache.SourceFetched, fmt.Errorf("list %q: %w", server, supervisor.ErrUnknownServer)
	}
	items, err := f.list(ctx, server, method, base, opts)
	return items, f.source, err
}

func (f *fakeBackend) ClearCache(name string) (int, error) {
	if name != "" && !contains(f.Names(), name) {
		return 0, fmt.Errorf("clear cache %q: %w", name, supervisor.ErrUnknownServer)
	}
	return 0, nil
}

func (f *fakeBackend) ctl(ctx context.Context, verb, name string) (supervisor.Status, error) {
	if f.control == nil {
		return supervisor.Status{}, fmt.Errorf("%s %q: %w", verb, name, supervisor.ErrUnknownServer)
	}
	return f.control(ctx, verb, name)
}

func (f *fakeBackend) Start(ctx context.Context, name string) (supervisor.Status, error) {
	return f.ctl(ctx, "start", name)
}

func (f *fakeBackend) Stop(ctx context.Context, name string) (supervisor.Status, error) {
	return f.ctl(ctx, "stop", name)
}

func (f *fakeBackend) Restart(ctx context.Context, name string) (supervisor.Status, error) {
	return f.ctl(ctx, "restart", name)
}

func (f *fakeBackend) Status() []supervisor.Status { return f.status }

func (f *fakeBackend) ServerStatus(name string) (supervisor.Status, error) {
	for _, s := range f.status {
		if s.Name == name {
			return s, nil
		}
	}
	return supervisor.Status{}, supervisor.ErrUnknownServer
}

func (f *fakeBackend) Logs(name string, n int) ([]transport.Line, error) {
	if f.logs == nil {
		return nil, supervisor.ErrUnknownServer
	}
	return f.logs(name, n)
}

func (f *fakeBackend) Names() []string {
	var names []string
	for _, s := range f.status {
		names = append(names, s.Name)
	}
	sort.Strings(names)
	return names
}

// harness is a real gRPC server on a real Unix socket in front of a fake
// backend, and a client connected to it.
type harness struct {
	srv    *Server
	client mcpdv1.McpdClient
	conn   *grpc.ClientConn
	path   string
}

func newHarness(t *testing.T, b backend, dialOpts ...grpc.DialOption) *harness {
	t.Helper()
	return newHarnessLog(t, b, zaptest.NewLogger(t), dialOpts...)
}

// newHarnessLog is newHarness with the server logging to log.
func newHarnessLog(t *testing.T, b backend, log *zap.Logger, dialOpts ...grpc.DialOption) *harness {
	t.Helper()
	path := filepath.Join(shortDir(t), "s", "mcpd.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(b, Options{Logger: log, SocketPath: path, ConfigPath: "/cfg.json"})
	gs := NewGRPCServer(srv, log)
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	t.Cleanup(func() {
		gs.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	conn := dial(t, path, dialOpts...)
	return &harness{srv: srv, client: mcpdv1.NewMcpdClient(conn), conn: conn, path: path}
}

func dial(t *testing.T, path string, opts ...grpc.DialOption) *grpc.ClientConn {
	t.Helper()
	opts = append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)
	conn, err := grpc.NewClient("unix://"+path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantCode(t *testing.T, err error, code codes.Code, contains string) {
	t.Helper()
	if status.Code(err) != code {
		t.Fatalf("error = %v, want code %v", err, code)
	}
	if !strings.Contains(status.Convert(err).Message(), contains) {
		t.Fatalf("error message %q does not contain %q", status.Convert(err).Message(), contains)
	}
}

// recvAll reads a call stream to its end.
func recvAll(stream grpc.ServerStreamingClient[mcpdv1.CallToolEvent]) ([]*mcpdv1.CallToolEvent, error) {
	var evs []*mcpdv1.CallToolEvent
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			return evs, nil
		}
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestCallToolRequestMapping(t *testing.T) {
	type seen struct {
		server, method, params, clientInfo, caps string
		timeout                                  time.Duration
	}
	got := make(chan seen, 1)
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		got <- seen{server, req.Method, string(req.WholeParams()), string(req.ClientInfo), string(req.ClientCapabilities), opts.Timeout}
		return &session.Response{Result: json.RawMessage(`{"content":[{"type":"text","text":"hi"}],  "x-unknown":{"kept":true}}`)}, nil
	}}
	h := newHarness(t, b)
	stream, err := h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{
		Server:             "echo",
		Tool:               "say",
		ArgumentsJson:      "{\n  \"text\": \"hi\"\n}",
		MetaJson:           `{"progressToken":"p1"}`,
		InputResponsesJson: `{"k":{"action":"accept"}}`,
		RequestState:       "opaque",
		Options: &mcpdv1.CallOptions{
			TimeoutMs:              1500,
			Client:                 &mcpdv1.ClientInfo{Name: "ide", Version: "1.2"},
			ClientCapabilitiesJson: `{"elicitation":{}}`,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := recvAll(stream)
	if err != nil {
		t.Fatal(err)
	}
	want := seen{
		server: "echo",
		method: "tools/call",
		// The arguments come last: they are passed beside the rest.
		params:     `{"_meta":{"progressToken":"p1"},"name":"say","inputResponses":{"k":{"action":"accept"}},"requestState":"opaque","arguments":{"text":"hi"}}`,
		clientInfo: `{"name":"ide","version":"1.2"}`,
		caps:       `{"elicitation":{}}`,
		timeout:    1500 * time.Millisecond,
	}
	if diff := cmp.Diff(want, <-got, cmp.AllowUnexported(seen{})); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if len(evs) != 1 || evs[0].GetResponse() == nil {
		t.Fatalf("events = %v, want exactly one response", evs)
	}
	r := evs[0].GetResponse()
	// The result is passed through byte for byte.
	if want := `{"content":[{"type":"text","text":"hi"}],  "x-unknown":{"kept":true}}`; r.GetResultJson() != want {
		t.Errorf("result_json = %s, want %s", r.GetResultJson(), want)
	}
	if r.GetServer() != "echo" || r.GetError() != nil {
		t.Errorf("response = %v", r)
	}
}

func TestCallToolMinimalParams(t *testing.T) {
	got := make(chan *session.Request, 1)
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		got <- req
		return &session.Response{Result: json.RawMessage(`{}`)}, nil
	}}
	h := newHarness(t, b)
	stream, err := h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{Server: "s", Tool: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recvAll(stream); err != nil {
		t.Fatal(err)
	}
	req := <-got
	if string(req.WholeParams()) != `{"name":"t"}` {
		t.Errorf("params = %s", req.WholeParams())
	}
	if req.ClientInfo != nil || req.ClientCapabilities != nil {
		t.Errorf("client info %s, caps %s: want nil (mcpd's own, {})", req.ClientInfo, req.ClientCapabilities)
	}
}

func TestMCPErrorIsAResponse(t *testing.T) {
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		return &session.Response{Error: &session.RPCError{Code: -32602, Message: "Unknown tool: nope", Data: json.RawMessage(`{"tool":"nope"}`)}}, nil
	}}
	h := newHarness(t, b)
	stream, err := h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{Server: "s", Tool: "nope"})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := recvAll(stream)
	if err != nil {
		t.Fatalf("MCP error became a gRPC error: %v", err)
	}
	want := &mcpdv1.McpError{Code: -32602, Message: "Unknown tool: nope", DataJson: `{"tool":"nope"}`}
	if len(evs) != 1 {
		t.Fatalf("events = %v", evs)
	}
	if diff := cmp.Diff(want, evs[0].GetResponse().GetError(), protocmp.Transform()); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
	if evs[0].GetResponse().GetResultJson() != "" {
		t.Errorf("result_json set together with error")
	}

	// The unary RPCs do the same.
	resp, err := h.client.ReadResource(ctxT(t), &mcpdv1.ReadResourceRequest{Server: "s", Uri: "file:///x"})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, resp.GetError(), protocmp.Transform()); diff != "" {
		t.Errorf("ReadResource error (-want +got):\n%s", diff)
	}
}

func TestCallToolStreamsProgressBeforeResponse(t *testing.T) {
	const n = 10
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		if req.OnProgress == nil {
			return nil, errors.New("no OnProgress")
		}
		for i := 1; i <= n; i++ {
			req.OnProgress(json.RawMessage(fmt.Sprintf(`{"progressToken":"app","progress":%d}`, i)))
		}
		return &session.Response{Result: json.RawMessage(`{"done":true}`)}, nil
	}}
	h := newHarness(t, b)
	stream, err := h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{Server: "s", Tool: "slow", MetaJson: `{"progressToken":"app"}`})
	if err != nil {
		t.Fatal(err)
	}
	evs, err := recvAll(stream)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range evs {
		switch e := ev.Event.(type) {
		case *mcpdv1.CallToolEvent_ProgressJson:
			got = append(got, e.ProgressJson)
		case *mcpdv1.CallToolEvent_Response:
			got = append(got, "response "+e.Response.GetResultJson())
		}
	}
	var want []string
	for i := 1; i <= n; i++ {
		want = append(want, fmt.Sprintf(`{"progressToken":"app","progress":%d}`, i))
	}
	want = append(want, `response {"done":true}`)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestProgressQueueNeverBlocks(t *testing.T) {
	q := newProgressQueue(4)
	for i := range 100 { // nobody drains: push must still return
		q.push(json.RawMessage(fmt.Sprint(i)))
	}
	if got := q.dropped.Load(); got != 96 {
		t.Errorf("dropped = %d, want 96", got)
	}
	var got []string
	for range 4 {
		got = append(got, string((<-q.ch).params))
	}
	// The newest survive.
	if diff := cmp.Diff([]string{"96", "97", "98", "99"}, got); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
}

func TestProgressQueueCopiesParams(t *testing.T) {
	q := newProgressQueue(2)
	buf := []byte(`{"progress":1}`)
	q.push(buf)
	copy(buf, `{"progress":9}`)
	if got := string((<-q.ch).params); got != `{"progress":1}` {
		t.Errorf("queued params changed with the caller's buffer: %s", got)
	}
}

func TestCallErrorsMapToStatus(t *testing.T) {
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		switch server {
		case "loop":
			return nil, fmt.Errorf("server %q is in a crash loop (exit status 1): %w", server, supervisor.ErrUnavailable)
		case "gone":
			return nil, fmt.Errorf("call %q: %w", server, session.ErrClosed)
		}
		return nil, fmt.Errorf("call %q: %w", server, supervisor.ErrUnknownServer)
	}}
	h := newHarness(t, b)
	tests := []struct {
		server   string
		code     codes.Code
		contains string
	}{
		{"loop", codes.Unavailable, `server "loop" is in a crash loop`},
		{"gone", codes.Unavailable, "server exited"},
		{"nope", codes.NotFound, "unknown server"},
	}
	for _, tt := range tests {
		t.Run(tt.server, func(t *testing.T) {
			stream, err := h.client.CallTool(ctxT(t), &mcpdv1.CallToolRequest{Server: tt.server, Tool: "t"})
			if err == nil {
				_, err = recvAll(stream)
			}
			wantCode(t, err, tt.code, tt.contains)
			// mcpd's own errors say so, for clients to tell them from a
			// connection that failed.
			if got := stream.Trailer().Get("mcpd-daemon"); len(got) != 1 {
				t.Errorf("CallTool's trailer = %v, want mcpd-daemon", stream.Trailer())
			}
			var trailer metadata.MD
			_, err = h.client.GetPrompt(ctxT(t), &mcpdv1.GetPromptRequest{Server: tt.server, Name: "p"}, grpc.Trailer(&trailer))
			wantCode(t, err, tt.code, tt.contains)
			if got := trailer.Get("mcpd-daemon"); len(got) != 1 {
				t.Errorf("GetPrompt's trailer = %v, want mcpd-daemon", trailer)
			}
		})
	}
}

func TestCancelReachesBackend(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		close(started)
		<-ctx.Done()
		ended <- ctx.Err()
		return nil, ctx.Err()
	}}
	h := newHarness(t, b)
	ctx, cancel := context.WithCancel(ctxT(t))
	stream, err := h.client.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "s", Tool: "sleep"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	if _, err := recvAll(stream); status.Code(err) != codes.Canceled {
		t.Errorf("stream error = %v, want Canceled", err)
	}
	if err := <-ended; !errors.Is(err, context.Canceled) {
		t.Errorf("backend ctx ended with %v, want Canceled", err)
	}
}

func TestValidation(t *testing.T) {
	called := make(chan string, 100)
	b := &fakeBackend{
		call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
			called <- req.Method
			return &session.Response{Result: json.RawMessage(`{}`)}, nil
		},
		list: func(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, error) {
			called <- method
			return json.RawMessage(`[]`), nil
		},
	}
	h := newHarness(t, b)
	c := h.client
	callTool := func(req *mcpdv1.CallToolRequest) error {
		s, err := c.CallTool(ctxT(t), req)
		if err != nil {
			return err
		}
		_, err = recvAll(s)
		return err
	}
	sendRequest := func(req *mcpdv1.SendRequestRequest) error {
		s, err := c.SendRequest(ctxT(t), req)
		if err != nil {
			return err
		}
		_, err = recvAll(s)
		return err
	}
	tests := []struct {
		name     string
		do       func() error
		contains string
	}{
		{"call no server", func() error { return callTool(&mcpdv1.CallToolRequest{Tool: "t"}) }, "server name required"},
		{"call no tool", func() error { return callTool(&mcpdv1.CallToolRequest{Server: "s"}) }, "tool name required"},
		{"call bad arguments", func() error {
			return callTool(&mcpdv1.CallToolRequest{Server: "s", Tool: "t", ArgumentsJson: "{"})
		}, "arguments_json"},
		{"call arguments not object", func() error {
			return callTool(&mcpdv1.CallToolRequest{Server: "s", Tool: "t", ArgumentsJson: "[1]"})
		}, "arguments_json: must be a JSON object"},
		{"call bad meta", func() error { return callTool(&mcpdv1.CallToolRequest{Server: "s", Tool: "t", MetaJson: "x"}) }, "meta_json"},
		{"call object progress token", func() error {
			return callTool(&mcpdv1.CallToolRequest{Server: "s", Tool: "echo", MetaJson: `{"progressToken":{"a":1}}`})
		}, "progressToken must be a string or an integer"},
		{"call bad input responses", func() error {
			return callTool(&mcpdv1.CallToolRequest{Server: "s", Tool: "t", InputResponsesJson: "1"})
		}, "input_responses_json"},
		{"call bad caps", func() error {
			return callTool(&mcpdv1.CallToolRequest{Server: "s", Tool: "t", Options: &mcpdv1.CallOptions{ClientCapabilitiesJson: "nope"}})
		}, "options.client_capabilities_json"},
		{"call negative timeout", func() error {
			return callTool(&mcpdv1.CallToolRequest{Server: "s", Tool: "t", Options: &mcpdv1.CallOptions{TimeoutMs: -1}})
		}, "timeout_ms"},
		{"prompt no name", func() error {
			_, err := c.GetPrompt(ctxT(t), &mcpdv1.GetPromptRequest{Server: "s"})
			return err
		}, "prompt name required"},
		{"prompt non-string arguments", func() error {
			_, err := c.GetPrompt(ctxT(t), &mcpdv1.GetPromptRequest{Server: "s", Name: "p", ArgumentsJson: `{"a":1}`})
			return err
		}, "arguments_json"},
		{"read no uri", func() error {
			_, err := c.ReadResource(ctxT(t), &mcpdv1.ReadResourceRequest{Server: "s"})
			return err
		}, "uri required"},
		{"complete no params", func() error {
			_, err := c.Complete(ctxT(t), &mcpdv1.CompleteRequest{Server: "s"})
			return err
		}, "params_json required"},
		{"complete bad params", func() error {
			_, err := c.Complete(ctxT(t), &mcpdv1.CompleteRequest{Server: "s", ParamsJson: "{]"})
			return err
		}, "params_json"},
		{"send no method", func() error { return sendRequest(&mcpdv1.SendRequestRequest{Server: "s"}) }, "method required"},
		{"send notification", func() error {
			return sendRequest(&mcpdv1.SendRequestRequest{Server: "s", Method: "notifications/cancelled"})
		}, "notification"},
		{"send initialize", func() error { return sendRequest(&mcpdv1.SendRequestRequest{Server: "s", Method: "initialize"}) }, "handshake"},
		{"send bad params", func() error {
			return sendRequest(&mcpdv1.SendRequestRequest{Server: "s", Method: "ping", ParamsJson: `"x"`})
		}, "params_json"},
		{"start no name", func() error { _, err := c.StartServer(ctxT(t), &mcpdv1.StartServerRequest{}); return err }, "server name required"},
		{"stop no name", func() error { _, err := c.StopServer(ctxT(t), &mcpdv1.StopServerRequest{}); return err }, "server name required"},
		{"restart no name", func() error { _, err := c.RestartServer(ctxT(t), &mcpdv1.RestartServerRequest{}); return err }, "server name required"},
		{"logs no name", func() error { _, err := c.GetLogs(ctxT(t), &mcpdv1.GetLogsRequest{}); return err }, "server name required"},
		{"logs negative", func() error { _, err := c.GetLogs(ctxT(t), &mcpdv1.GetLogsRequest{Name: "s", Lines: -1}); return err }, "lines"},
		{"list bad caps", func() error {
			_, err := c.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Options: &mcpdv1.CallOptions{ClientCapabilitiesJson: "["}})
			return err
		}, "options.client_capabilities_json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantCode(t, tt.do(), codes.InvalidArgument, tt.contains)
		})
	}
	select {
	case m := <-called:
		t.Errorf("an invalid request reached the backend: %s", m)
	default:
	}
}

func TestOtherMCPRequests(t *testing.T) {
	type seen struct{ method, params string }
	got := make(chan seen, 10)
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		got <- seen{req.Method, string(req.WholeParams())}
		return &session.Response{Result: json.RawMessage(`{"ok":1}`)}, nil
	}}
	h := newHarness(t, b)
	c := h.client
	ctx := ctxT(t)
	if _, err := c.GetPrompt(ctx, &mcpdv1.GetPromptRequest{Server: "s", Name: "review", ArgumentsJson: `{"lang":"go"}`, RequestState: "st"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Server: "s", Uri: "file:///a", InputResponsesJson: `{"k":{}}`}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, &mcpdv1.CompleteRequest{Server: "s", ParamsJson: `{"ref":{"type":"ref/prompt","name":"review"},"argument":{"name":"lang","value":"g"}}`}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"", `{"a": 1}`} {
		s, err := c.SendRequest(ctx, &mcpdv1.SendRequestRequest{Server: "s", Method: "ping", ParamsJson: p})
		if err != nil {
			t.Fatal(err)
		}
		evs, err := recvAll(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != 1 || evs[0].GetResponse().GetResultJson() != `{"ok":1}` {
			t.Errorf("SendRequest events = %v", evs)
		}
	}
	want := []seen{
		{"prompts/get", `{"name":"review","arguments":{"lang":"go"},"requestState":"st"}`},
		{"resources/read", `{"uri":"file:///a","inputResponses":{"k":{}}}`},
		{"completion/complete", `{"ref":{"type":"ref/prompt","name":"review"},"argument":{"name":"lang","value":"g"}}`},
		{"ping", `{}`},
		{"ping", `{"a":1}`},
	}
	for i, w := range want {
		if diff := cmp.Diff(w, <-got, cmp.AllowUnexported(seen{})); diff != "" {
			t.Errorf("request %d (-want +got):\n%s", i, diff)
		}
	}
}

func TestListAggregates(t *testing.T) {
	var mu sync.Mutex
	asked := map[string]string{}
	b := &fakeBackend{
		status: []supervisor.Status{
			{Name: "a", State: supervisor.StateReady},
			{Name: "b", State: supervisor.StateCrashLoop},
			{Name: "c", State: supervisor.StateReady},
			{Name: "off", Disabled: true},
		},
		list: func(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, error) {
			mu.Lock()
			asked[server] = method + " " + string(base.ClientInfo)
			mu.Unlock()
			switch server {
			case "a":
				return json.RawMessage(`[{"name":"t1"}]`), nil
			case "b":
				return nil, fmt.Errorf("server %q is in a crash loop: %w", server, supervisor.ErrUnavailable)
			case "c":
				return nil, fmt.Errorf("tools/list: %w", &session.RPCError{Code: -32601, Message: "Method not found"})
			}
			return nil, fmt.Errorf("list %q: %w", server, supervisor.ErrUnknownServer)
		},
	}
	h := newHarness(t, b)
	ctx := metadata.AppendToOutgoingContext(ctxT(t), MetadataClientName, "script", MetadataClientVersion, "0.1")
	resp, err := h.client.ListTools(ctx, &mcpdv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := []*mcpdv1.ServerList{
		{Server: "a", ItemsJson: `[{"name":"t1"}]`, Cache: mcpdv1.CacheStatus_CACHE_STATUS_FETCHED},
		{Server: "b", Unavailable: `server "b" is in a crash loop: supervisor: server unavailable`},
		{Server: "c", Error: &mcpdv1.McpError{Code: -32601, Message: "Method not found"}, Cache: mcpdv1.CacheStatus_CACHE_STATUS_FETCHED},
	}
	if diff := cmp.Diff(want, resp.GetServers(), protocmp.Transform()); diff != "" {
		t.Errorf("servers (-want +got):\n%s", diff)
	}
	wantAsked := map[string]string{
		"a": `tools/list {"name":"script","version":"0.1"}`,
		"b": `tools/list {"name":"script","version":"0.1"}`,
		"c": `tools/list {"name":"script","version":"0.1"}`,
	}
	if diff := cmp.Diff(wantAsked, asked); diff != "" {
		t.Errorf("asked (-want +got):\n%s", diff)
	}

	// Every list RPC uses its own method.
	for _, tc := range []struct {
		method string
		call   func() error
	}{
		{"prompts/list", func() error { _, err := h.client.ListPrompts(ctx, &mcpdv1.ListPromptsRequest{Server: "a"}); return err }},
		{"resources/list", func() error {
			_, err := h.client.ListResources(ctx, &mcpdv1.ListResourcesRequest{Server: "a"})
			return err
		}},
		{"resources/templates/list", func() error {
			_, err := h.client.ListResourceTemplates(ctx, &mcpdv1.ListResourceTemplatesRequest{Server: "a"})
			return err
		}},
	} {
		if err := tc.call(); err != nil {
			t.Fatal(err)
		}
		if got := strings.Fields(asked["a"])[0]; got != tc.method {
			t.Errorf("method = %q, want %q", got, tc.method)
		}
	}
}

func TestListNamed(t *testing.T) {
	b := &fakeBackend{
		status: []supervisor.Status{{Name: "a"}, {Name: "b"}},
		list: func(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, error) {
			switch server {
			case "a":
				return json.RawMessage(`[]`), nil
			case "b":
				return nil, fmt.Errorf("server %q failed: %w", server, supervisor.ErrUnavailable)
			}
			return nil, fmt.Errorf("list %q: %w", server, supervisor.ErrUnknownServer)
		},
	}
	h := newHarness(t, b)
	resp, err := h.client.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetServers()) != 1 || resp.GetServers()[0].GetServer() != "a" || resp.GetServers()[0].GetItemsJson() != "[]" {
		t.Errorf("servers = %v", resp.GetServers())
	}
	_, err = h.client.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: "nope"})
	wantCode(t, err, codes.NotFound, "unknown server")
	_, err = h.client.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: "b"})
	wantCode(t, err, codes.Unavailable, `server "b" failed`)
}

func TestOperatorRPCs(t *testing.T) {
	started := time.Now().Add(-3 * time.Second)
	b := &fakeBackend{
		status: []supervisor.Status{{
			Name: "echo", State: supervisor.StateReady, Pid: 42, StartedAt: started, Restarts: 2,
			Era: session.EraLegacy, ProtocolVersion: "2025-11-25", ServerInfo: json.RawMessage(`{"name":"e"}`),
			LastExit: "exit status 1", Autostart: true, CallsTotal: 7, Command: "echo-server",
		}},
		control: func(ctx context.Context, verb, name string) (supervisor.Status, error) {
			if name != "echo" {
				return supervisor.Status{}, fmt.Errorf("%s %q: %w", verb, name, supervisor.ErrUnknownServer)
			}
			st := supervisor.State(map[string]string{"start": "ready", "stop": "stopped", "restart": "starting"}[verb])
			return supervisor.Status{Name: name, State: st, ExplicitlyStopped: verb == "stop"}, nil
		},
		logs: func(name string, n int) ([]transport.Line, error) {
			if name != "echo" {
				return nil, fmt.Errorf("logs %q: %w", name, supervisor.ErrUnknownServer)
			}
			return []transport.Line{{Time: time.UnixMilli(1000), Text: fmt.Sprintf("n=%d", n), Pid: 42, Truncated: true}}, nil
		},
	}
	h := newHarness(t, b)
	c := h.client
	ctx := ctxT(t)

	st, err := c.StartServer(ctx, &mcpdv1.StartServerRequest{Name: "echo"})
	if err != nil || st.GetServer().GetState() != mcpdv1.ServerState_SERVER_STATE_READY {
		t.Errorf("StartServer = %v, %v", st, err)
	}
	sp, err := c.StopServer(ctx, &mcpdv1.StopServerRequest{Name: "echo"})
	if err != nil || sp.GetServer().GetState() != mcpdv1.ServerState_SERVER_STATE_STOPPED || !sp.GetServer().GetExplicitlyStopped() {
		t.Errorf("StopServer = %v, %v", sp, err)
	}
	rs, err := c.RestartServer(ctx, &mcpdv1.RestartServerRequest{Name: "echo"})
	if err != nil || rs.GetServer().GetState() != mcpdv1.ServerState_SERVER_STATE_STARTING {
		t.Errorf("RestartServer = %v, %v", rs, err)
	}
	_, err = c.StartServer(ctx, &mcpdv1.StartServerRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, `start "nope"`)

	logs, err := c.GetLogs(ctx, &mcpdv1.GetLogsRequest{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	wantLogs := []*mcpdv1.LogLine{{TimeUnixMs: 1000, Text: fmt.Sprintf("n=%d", DefaultLogLines), Truncated: true, Pid: 42}}
	if diff := cmp.Diff(wantLogs, logs.GetLines(), protocmp.Transform()); diff != "" {
		t.Errorf("logs (-want +got):\n%s", diff)
	}
	_, err = c.GetLogs(ctx, &mcpdv1.GetLogsRequest{Name: "nope"})
	wantCode(t, err, codes.NotFound, "nope")

	ls, err := c.ListServers(ctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := ls.GetServers()[0]
	if got.GetUptimeMs() < 3000 || got.GetStartedAtUnixMs() != started.UnixMilli() {
		t.Errorf("uptime %d, started %d", got.GetUptimeMs(), got.GetStartedAtUnixMs())
	}
	got.UptimeMs = 0
	want := &mcpdv1.ServerStatus{
		Name: "echo", State: mcpdv1.ServerState_SERVER_STATE_READY, Pid: 42, StartedAtUnixMs: started.UnixMilli(),
		Restarts: 2, Era: "legacy", ProtocolVersion: "2025-11-25", ServerInfoJson: `{"name":"e"}`,
		LastExit: "exit status 1", Autostart: true, CallsTotal: 7, Command: "echo-server",
	}
	if diff := cmp.Diff(want, got, protocmp.Transform()); diff != "" {
		t.Errorf("server status (-want +got):\n%s", diff)
	}
}

func TestGetStatusApps(t *testing.T) {
	b := &fakeBackend{
		status: []supervisor.Status{{Name: "echo", State: supervisor.StateStopped}},
		call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
			return &session.Response{Result: json.RawMessage(`{}`)}, nil
		},
	}
	h := newHarness(t, b)
	h.srv.SetConfig("/etc/x.json", errors.New("config: bad"))
	ctx := ctxT(t)

	// A second app names itself per call.
	other := mcpdv1.NewMcpdClient(dial(t, h.path))
	s, err := other.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "echo", Tool: "t", Options: &mcpdv1.CallOptions{Client: &mcpdv1.ClientInfo{Name: "ide", Version: "2"}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := recvAll(s); err != nil {
		t.Fatal(err)
	}

	resp, err := h.client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetPid() != int64(os.Getpid()) || resp.GetSocketPath() != h.path || resp.GetConfigPath() != "/etc/x.json" || resp.GetConfigError() != "config: bad" || resp.GetVersion() == "" {
		t.Errorf("daemon fields = %v", resp)
	}
	if len(resp.GetServers()) != 1 || resp.GetServers()[0].GetState() != mcpdv1.ServerState_SERVER_STATE_STOPPED {
		t.Errorf("servers = %v", resp.GetServers())
	}
	var apps []string
	for _, a := range resp.GetApps() {
		if a.GetPid() != int64(os.Getpid()) || a.GetConnectedAtUnixMs() == 0 {
			t.Errorf("app %v: want our pid %d and a connect time", a, os.Getpid())
		}
		apps = append(apps, a.GetName()+"/"+a.GetVersion())
	}
	sort.Strings(apps)
	if diff := cmp.Diff([]string{"/", "ide/2"}, apps); diff != "" {
		t.Errorf("apps (-want +got):\n%s", diff)
	}
}

func TestHealthAndReflection(t *testing.T) {
	h := newHarness(t, &fakeBackend{})
	ctx := ctxT(t)
	for _, svc := range []string{"", HealthService} {
		resp, err := healthpb.NewHealthClient(h.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatal(err)
		}
		if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("health %q = %v", svc, resp.GetStatus())
		}
	}
	stream, err := reflectionpb.NewServerReflectionClient(h.conn).ServerReflectionInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	resp, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	stream.CloseSend()
	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	if !contains(names, "mcpd.v1.Mcpd") || !contains(names, "grpc.health.v1.Health") {
		t.Errorf("reflection lists %v", names)
	}
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// TestPeerCredentials runs the real handshake on real connections.
func TestPeerCredentials(t *testing.T) {
	tests := []struct {
		name    string
		wantUID int
		ok      bool
	}{
		{"own uid accepted", os.Geteuid(), true},
		{"other uid rejected", os.Geteuid() + 1000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(shortDir(t), "p.sock")
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			type result struct {
				info AuthInfo
				err  error
			}
			res := make(chan result, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					res <- result{err: err}
					return
				}
				creds := &peerCreds{wantUID: tt.wantUID, log: zaptest.NewLogger(t)}
				conn, info, err := creds.ServerHandshake(c)
				if err == nil {
					conn.Close()
					res <- result{info: info.(AuthInfo)}
					return
				}
				res <- result{err: err}
			}()
			c, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := <-res
			if !tt.ok {
				if !errors.Is(r.err, ErrPeerRejected) {
					t.Fatalf("handshake error = %v, want ErrPeerRejected", r.err)
				}
				// The connection was closed by the server.
				if n, err := c.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("read after rejection = %d, %v; want EOF", n, err)
				}
				return
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.info.UID != os.Geteuid() || r.info.PID != os.Getpid() || r.info.AuthType() != AuthType {
				t.Errorf("AuthInfo = %+v, want uid %d pid %d", r.info, os.Geteuid(), os.Getpid())
			}
		})
	}
}

// TestRejectedPeerCannotCall checks the whole server: a connection whose uid
// is not the daemon's gets no RPC through.
func TestRejectedPeerCannotCall(t *testing.T) {
	path := filepath.Join(shortDir(t), "s", "mcpd.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	srv := newServer(&fakeBackend{}, Options{Logger: log})
	gs := NewGRPCServer(srv, log, grpc.Creds(&peerCreds{wantUID: os.Geteuid() + 1000, log: log}))
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	defer func() {
		gs.Stop()
		<-served
	}()
	client := mcpdv1.NewMcpdClient(dial(t, path))
	ctx, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
	defer cancel()
	_, err = client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("GetStatus from a rejected uid = %v, want Unavailable", err)
	}
}
