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

// Every RPC answers a malformed request with InvalidArgument, before
// anything reaches the backend.
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
