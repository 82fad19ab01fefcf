package api

import (
	"context"
	"encoding/json"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

func TestCallToolUnaryMapsLikeCallTool(t *testing.T) {
	got := make(chan *session.Request, 1)
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		got <- req
		return &session.Response{Result: json.RawMessage(`{"content":[],  "kept":1}`)}, nil
	}}
	h := newHarness(t, b)
	resp, err := h.client.CallToolUnary(ctxT(t), &mcpdv1.CallToolRequest{
		Server: "s", Tool: "t", ArgumentsJson: "{\n \"a\": 1\n}", MetaJson: `{"k":"v"}`, RequestState: "st",
		Options: &mcpdv1.CallOptions{Client: &mcpdv1.ClientInfo{Name: "ide", Version: "1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	req := <-got
	// The arguments (compacted) go beside the other params, not copied
	// into them.
	if want := `{"_meta":{"k":"v"},"name":"t","requestState":"st"}`; string(req.Params) != want || string(req.Arguments) != `{"a":1}` {
		t.Errorf("params = %s, arguments %s, want %s and {\"a\":1}", req.Params, req.Arguments, want)
	}
	if !req.Validated || string(req.ClientInfo) != `{"name":"ide","version":"1"}` {
		t.Errorf("validated %v, client info %s", req.Validated, req.ClientInfo)
	}
	if resp.GetResultJson() != `{"content":[],  "kept":1}` || resp.GetServer() != "s" {
		t.Errorf("response = %v", resp)
	}
}

func TestCallToolUnaryMCPErrorIsAResponse(t *testing.T) {
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		return &session.Response{Error: &session.RPCError{Code: -32602, Message: "Unknown tool: nope"}}, nil
	}}
	h := newHarness(t, b)
	resp, err := h.client.CallToolUnary(ctxT(t), &mcpdv1.CallToolRequest{Server: "s", Tool: "nope"})
	if err != nil {
		t.Fatalf("MCP error became a gRPC error: %v", err)
	}
	if resp.GetError().GetCode() != -32602 || resp.GetResultJson() != "" {
		t.Errorf("response = %v", resp)
	}
}

func TestCallToolUnaryRefusesBadInput(t *testing.T) {
	b := &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		t.Errorf("bad request reached the backend: %s", req.Params)
		return &session.Response{Result: json.RawMessage(`{}`)}, nil
	}}
	h := newHarness(t, b)
	for _, c := range []struct {
		req  *mcpdv1.CallToolRequest
		want string
	}{
		{&mcpdv1.CallToolRequest{Tool: "t"}, "server name required"},
		{&mcpdv1.CallToolRequest{Server: "s"}, "tool name required"},
		{&mcpdv1.CallToolRequest{Server: "s", Tool: "t", ArgumentsJson: `{"a":`}, "invalid arguments_json"},
		{&mcpdv1.CallToolRequest{Server: "s", Tool: "t", ArgumentsJson: `[1]`}, "must be a JSON object"},
		{&mcpdv1.CallToolRequest{Server: "s", Tool: "t", MetaJson: `{"progressToken":"p"}`}, "use CallTool"},
	} {
		_, err := h.client.CallToolUnary(ctxT(t), c.req)
		wantCode(t, err, codes.InvalidArgument, c.want)
	}
	// A null token asks for nothing: accepted.
	ok := newHarness(t, &fakeBackend{call: func(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, error) {
		return &session.Response{Result: json.RawMessage(`{}`)}, nil
	}})
	if _, err := ok.client.CallToolUnary(ctxT(t), &mcpdv1.CallToolRequest{Server: "s", Tool: "t", MetaJson: `{"progressToken":null}`}); err != nil {
		t.Fatal(err)
	}
}
