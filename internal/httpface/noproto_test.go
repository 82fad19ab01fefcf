package httpface

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// directOnly is the HTTP face's backend whose mcpd.v1 request and list
// RPCs fail the test: what a host asks of a server must take the
// in-process service's plain Go path (Send, List, Read).
type directOnly struct {
	*Backend
	t *testing.T
}

func (d directOnly) refuse(rpc string) {
	d.t.Errorf("the bridge called %s with an mcpd.v1 message: the in-process path builds none", rpc)
}

func (d directOnly) ListTools(ctx context.Context, in *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	d.refuse("ListTools")
	return d.Backend.ListTools(ctx, in)
}

func (d directOnly) ListPrompts(ctx context.Context, in *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	d.refuse("ListPrompts")
	return d.Backend.ListPrompts(ctx, in)
}

func (d directOnly) ListResources(ctx context.Context, in *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	d.refuse("ListResources")
	return d.Backend.ListResources(ctx, in)
}

func (d directOnly) ListResourceTemplates(ctx context.Context, in *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	d.refuse("ListResourceTemplates")
	return d.Backend.ListResourceTemplates(ctx, in)
}

func (d directOnly) ReadResource(ctx context.Context, in *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	d.refuse("ReadResource")
	return d.Backend.ReadResource(ctx, in)
}

func (d directOnly) SendRequest(ctx context.Context, in *mcpdv1.SendRequestRequest) (bridge.RecvStream[mcpdv1.CallToolEvent], error) {
	d.refuse("SendRequest")
	return d.Backend.SendRequest(ctx, in)
}

func (d directOnly) UpdateSubscription(ctx context.Context, in *mcpdv1.UpdateSubscriptionRequest) (*mcpdv1.UpdateSubscriptionResponse, error) {
	d.refuse("UpdateSubscription")
	return d.Backend.UpdateSubscription(ctx, in)
}

// A host's lists, call, read and resource subscription through the HTTP
// face reach the child without an mcpd.v1 request, on one server's
// endpoint and on the aggregate.
func TestHTTPHostRequestsBuildNoProto(t *testing.T) {
	srv, be := newDaemon(t)
	h := bridge.NewHTTPHandler(directOnly{Backend: be, t: t}, bridge.HTTPOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := Serve(ln, h, Options{Server: srv, WantUID: -1})
	t.Cleanup(func() {
		h.Close()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, tc := range []struct{ path, tool string }{
		{"/servers/fake/mcp", "echo"},
		{"/mcp", "fake__echo"},
	} {
		host := newTestHost(t, "http://"+ln.Addr().String()+tc.path, "noproto-host")
		host.initialize() // lists tools
		for _, req := range []struct{ body, want string }{
			{`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + tc.tool + `","arguments":{"message":"plain"}}}`, `plain`},
			{`{"jsonrpc":"2.0","id":4,"method":"resources/list"}`, `fake://hello`},
			{`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"fake://hello"}}`, `"text":"hello"`},
			{`{"jsonrpc":"2.0","id":6,"method":"prompts/list"}`, `"prompts"`},
			{`{"jsonrpc":"2.0","id":7,"method":"resources/subscribe","params":{"uri":"fake://hello"}}`, `"result"`},
		} {
			if code, got := host.post(req.body); code != http.StatusOK || !strings.Contains(got, req.want) {
				t.Fatalf("%s: %s: %d %s", tc.path, req.body, code, got)
			}
		}
	}
}
