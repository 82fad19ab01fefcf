package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The MCP request RPCs (mcp.go): what reaches the backend, how its answers,
// progress and errors come back, and cancellation.

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
