package api

import (
	"context"
	"encoding/json"
	"testing"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// A Host stream must open with a registration, and only answers may
// follow it: anything else ends it with INVALID_ARGUMENT.
func TestHostStreamRefusals(t *testing.T) {
	h := newHarness(t, &fakeBackend{})
	answer := &mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Answer{Answer: &mcpdv1.HostAnswer{CallId: 1, ResultJson: `{}`}}}
	register := &mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: &mcpdv1.HostRegistration{Roots: true}}}
	for _, tc := range []struct {
		name string
		msgs []*mcpdv1.HostRequest
		want string
	}{
		{"an answer first", []*mcpdv1.HostRequest{answer}, "must be a registration"},
		{"a registration answering nothing", []*mcpdv1.HostRequest{{Msg: &mcpdv1.HostRequest_Register{Register: &mcpdv1.HostRegistration{}}}}, "at least one of"},
		{"a second registration", []*mcpdv1.HostRequest{register, register}, "only answers may follow"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			host, err := h.client.Host(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tc.msgs {
				if err := host.Send(m); err != nil {
					t.Fatal(err)
				}
			}
			for {
				if _, err = host.Recv(); err != nil {
					break
				}
			}
			wantCode(t, err, codes.InvalidArgument, tc.want)
		})
	}
}

// What a streaming call's metadata names reaches the service: its
// profile hides a tool on CallTool as it does on CallToolUnary, and a
// profile the config lacks is refused.
func TestMetadataReachesStreamingCalls(t *testing.T) {
	calls := 0
	b := &fakeBackend{call: func(context.Context, string, *session.Request, supervisor.CallOptions) (*session.Response, error) {
		calls++
		return &session.Response{Result: json.RawMessage(`{"content":[]}`)}, nil
	}}
	h := newHarnessLog(t, b, zaptest.NewLogger(t))
	echo, err := profile.ParseGlob("echo")
	if err != nil {
		t.Fatal(err)
	}
	h.srv.SetProfiles(profile.Set{"p": {Name: "p", Servers: map[string]*profile.Server{
		"s": {Tools: profile.Rules{Allow: []profile.Glob{echo}, HasAllow: true}},
	}}})
	call := func(ctx context.Context, tool string) (*mcpdv1.McpResponse, error) {
		stream, err := h.client.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "s", Tool: tool})
		if err != nil {
			return nil, err
		}
		evs, err := recvAll(stream)
		if err != nil {
			return nil, err
		}
		return evs[len(evs)-1].GetResponse(), nil
	}
	underP := metadata.AppendToOutgoingContext(ctxT(t), mcpdv1.MetadataProfile, "p")
	resp, err := call(underP, "secret")
	if err != nil || resp.GetError() == nil || calls != 0 {
		t.Fatalf("a tool profile p hides, through CallTool: %v, %v, %d calls; want the error for a tool the server lacks", resp, err, calls)
	}
	if resp, err := call(underP, "echo"); err != nil || resp.GetError() != nil || calls != 1 {
		t.Fatalf("a tool profile p shows: %v, %v, %d calls", resp, err, calls)
	}
	if resp, err := call(ctxT(t), "secret"); err != nil || resp.GetError() != nil || calls != 2 {
		t.Fatalf("no profile: %v, %v, %d calls; want the call made", resp, err, calls)
	}
	_, err = call(metadata.AppendToOutgoingContext(ctxT(t), mcpdv1.MetadataProfile, "nosuch"), "echo")
	wantClass(t, err, codes.NotFound, mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_PROFILE, map[string]string{"profile": "nosuch"})
}
