package api

import (
	"context"
	"encoding/json"
	"testing"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestToolCallOneEntry: an app's tool call (the CallToolUnary handler,
// called in process) and a host's (a tools/call sent by a core.App) of the
// same tool with the same flaw are refused alike, with the same class: the
// profile's gate, its hidden tool, the call's parts and its options are
// checked by one entry. A call that passes reaches the server with the
// same arguments by both doors.
func TestToolCallOneEntry(t *testing.T) {
	var got []json.RawMessage
	b := &fakeBackend{call: func(_ context.Context, _ string, req *session.Request, _ supervisor.CallOptions) (*session.Response, error) {
		args := req.Arguments
		if args == nil {
			var p struct{ Arguments json.RawMessage }
			if err := json.Unmarshal(req.Params, &p); err != nil {
				t.Errorf("params %s: %v", req.Params, err)
			}
			args = p.Arguments
		}
		got = append(got, append(json.RawMessage(nil), args...))
		return &session.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
	}}
	s := core.New(b, core.Options{Logger: zaptest.NewLogger(t)})
	echo, err := profile.ParseGlob("echo")
	if err != nil {
		t.Fatal(err)
	}
	s.SetProfiles(profile.Set{"p": {Name: "p", Servers: map[string]*profile.Server{
		"s": {Tools: profile.Rules{Allow: []profile.Glob{echo}, HasAllow: true}},
	}}})
	door := &Server{svc: s} // the gRPC door's handlers
	host := s.NewLocalApp(core.TransportHTTP, "host", 0, 0)
	defer host.Close()
	ctx := core.WithProfile(context.Background(), "p")

	type call struct {
		server, params string // params of tools/call, as a host writes them
		app            *mcpdv1.CallToolRequest
	}
	bad := map[string]call{
		"no tool":          {"s", `{"arguments":{}}`, &mcpdv1.CallToolRequest{Server: "s", ArgumentsJson: `{}`}},
		"arguments array":  {"s", `{"name":"echo","arguments":[1]}`, &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", ArgumentsJson: `[1]`}},
		"object token":     {"s", `{"name":"echo","_meta":{"progressToken":{"a":1}}}`, &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", MetaJson: `{"progressToken":{"a":1}}`}},
		"inputs no object": {"s", `{"name":"echo","inputResponses":1}`, &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", InputResponsesJson: `1`}},
		"not in profile":   {"other", `{"name":"echo"}`, &mcpdv1.CallToolRequest{Server: "other", Tool: "echo"}},
	}
	for name, c := range bad {
		t.Run(name, func(t *testing.T) {
			_, appErr := door.CallToolUnary(ctx, c.app)
			_, hostErr := host.SendRequest(ctx, service.Request{Server: c.server, Method: "tools/call", Params: json.RawMessage(c.params)}, nil)
			if appErr == nil || hostErr == nil {
				t.Fatalf("app: %v, host: %v; want both refused", appErr, hostErr)
			}
			as, hs := status.Convert(toStatus(appErr)), status.Convert(toStatus(hostErr))
			if as.Code() != hs.Code() || as.Code() == codes.Unknown {
				t.Errorf("app refused with %v (%s), host with %v (%s); want one class", as.Code(), as.Message(), hs.Code(), hs.Message())
			}
			if ar, hr := reasonOf(as), reasonOf(hs); ar != hr {
				t.Errorf("app's reason %v, host's %v", ar, hr)
			}
		})
	}

	t.Run("hidden tool", func(t *testing.T) {
		app, err := door.CallToolUnary(ctx, &mcpdv1.CallToolRequest{Server: "s", Tool: "secret"})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := host.SendRequest(ctx, service.Request{Server: "s", Method: "tools/call", Params: json.RawMessage(`{"name":"secret"}`)}, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := jsonrpc.Error{Code: int64(app.GetError().GetCode()), Message: app.GetError().GetMessage()}
		if app.GetError() == nil || resp.Error == nil || resp.Error.Code != want.Code || resp.Error.Message != want.Message {
			t.Errorf("app's answer %v, host's %+v; want the same hidden-tool error", app.GetError(), resp.Error)
		}
		if len(got) != 0 {
			t.Errorf("a hidden tool reached the server %d times", len(got))
		}
	})

	t.Run("passes", func(t *testing.T) {
		got = nil
		if _, err := door.CallToolUnary(ctx, &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", ArgumentsJson: `{"x":1}`}); err != nil {
			t.Fatal(err)
		}
		resp, err := host.SendRequest(ctx, service.Request{Server: "s", Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"x":1}}`)}, nil)
		if err != nil || resp.Error != nil {
			t.Fatalf("host: %v %+v", err, resp)
		}
		if len(got) != 2 || string(got[0]) != `{"x":1}` || string(got[1]) != `{"x":1}` {
			t.Errorf("the server got arguments %s, want {\"x\":1} twice", got)
		}
	})
}

// reasonOf is the ErrorReason a status carries in its details, if any.
func reasonOf(st *status.Status) string {
	for _, d := range st.Details() {
		if r, ok := d.(interface{ GetReason() string }); ok {
			return r.GetReason()
		}
	}
	return ""
}
