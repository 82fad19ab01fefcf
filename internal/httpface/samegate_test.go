package httpface

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// A host's tools/call through the in-process service and an app's
// CallTool pass the same profile gate: a tool the profile hides gets the
// same answer at both doors, and is left out of the host's list.
func TestDirectSameProfileGate(t *testing.T) {
	srv, be := newDaemon(t)
	echo, err := profile.ParseGlob("echo")
	if err != nil {
		t.Fatal(err)
	}
	srv.SetProfiles(profile.Set{"quiet": {Name: "quiet", Servers: map[string]*profile.Server{
		"fake": {Tools: profile.Rules{Deny: []profile.Glob{echo}}},
	}}})
	ctx := ctxT(t)

	hostCtx := bridge.WithProfile(ctx, "quiet")
	resp, err := be.Send(hostCtx, service.Request{Server: "fake", Method: "tools/call",
		Params: json.RawMessage(`{"name":"echo","arguments":{"message":"x"}}`)}, nil)
	if err != nil || resp.Error == nil {
		t.Fatalf("hidden tool through the HTTP face's service = %+v, %v: want the server's answer for a tool it lacks", resp, err)
	}

	app := srv.NewLocalApp(core.TransportGRPC, "app", -1, 0)
	defer app.Close()
	appResp, err := srv.CallToolUnary(app.Context(core.WithProfile(ctx, "quiet")),
		core.ToolCall{Server: "fake", Tool: "echo", Arguments: []byte(`{"message":"x"}`)}, service.Options{})
	if err != nil || appResp.Hidden == nil {
		t.Fatalf("hidden tool through the gRPC door's CallTool = %+v, %v", appResp, err)
	}
	if got, want := resp.Error, appResp.Hidden; got.Code != want.Code || got.Message != want.Message || string(got.Data) != string(want.Data) {
		t.Fatalf("the doors differ: host %+v, app %v", got, want)
	}

	lists, err := be.List(hostCtx, "fake", "tools/list", service.Options{})
	if err != nil || len(lists) != 1 || strings.Contains(string(lists[0].Items), `"name":"echo"`) {
		t.Fatalf("tools/list under the profile = %+v, %v: want echo left out", lists, err)
	}
	if _, err := be.Send(hostCtx, service.Request{Server: "fake", Method: "tools/call",
		Params: json.RawMessage(`{"name":"stats","arguments":{}}`)}, nil); err != nil {
		t.Fatalf("a shown tool under the profile: %v", err)
	}
}
