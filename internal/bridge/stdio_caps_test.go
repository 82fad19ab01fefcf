package bridge_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// capsMcpd is a bridgeMcpd whose servers declare the given capabilities;
// it lists no tools or prompts and records which server each SendRequest
// went to.
type capsMcpd struct {
	*bridgeMcpd
	caps map[string]string // server → capabilities JSON

	mu      sync.Mutex // guards servers
	servers []string   // of SendRequest, in order
}

func (f *capsMcpd) ListServers(context.Context, *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	var out []*mcpdv1.ServerStatus
	for _, n := range []string{"a", "b"} {
		out = append(out, &mcpdv1.ServerStatus{Name: n, State: mcpdv1.ServerState_SERVER_STATE_READY, Era: "legacy",
			ServerInfoJson: `{"name":"` + n + `","version":"1"}`, CapabilitiesJson: f.caps[n]})
	}
	return &mcpdv1.ListServersResponse{Servers: out}, nil
}

func (f *capsMcpd) ListTools(_ context.Context, r *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	return &mcpdv1.ListToolsResponse{Servers: []*mcpdv1.ServerList{{Server: r.GetServer(), ItemsJson: `[]`}}}, nil
}

func (f *capsMcpd) ListPrompts(_ context.Context, r *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	return &mcpdv1.ListPromptsResponse{Servers: []*mcpdv1.ServerList{{Server: r.GetServer(), ItemsJson: `[]`}}}, nil
}

// Host accepts the bridge's registration and keeps it until the bridge
// leaves.
func (f *capsMcpd) Host(stream mcpdv1.Mcpd_HostServer) error {
	if m, err := stream.Recv(); err != nil || m.GetRegister() == nil {
		return err
	}
	err := stream.Send(&mcpdv1.HostResponse{Msg: &mcpdv1.HostResponse_Registered{Registered: &mcpdv1.HostRegistered{HostId: 1}}})
	if err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (f *capsMcpd) SendRequest(r *mcpdv1.SendRequestRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	f.mu.Lock()
	f.servers = append(f.servers, r.GetServer())
	f.mu.Unlock()
	resp := &mcpdv1.McpResponse{Server: r.GetServer(), ResultJson: `{"task":{"taskId":"t1","status":"working"}}`}
	return stream.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{Response: resp}})
}

// The host gets the server's own capabilities, every member included
// (tasks, experimental, extensions); serving several, they are merged, and
// tasks, declared by one server only, is kept and its requests reach it.
func TestBridgePassesCapabilities(t *testing.T) {
	const (
		capsA = `{"tools":{"listChanged":true},"completions":{},` +
			`"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}},"experimental":{"x":{"on":true}}}`
		capsB  = `{"tools":{},"prompts":{"listChanged":false},"experimental":{"y":{}},"extensions":{"io.example/z":{"v":1}}}`
		merged = `{"tools":{"listChanged":true},"completions":{},"prompts":{"listChanged":true},"logging":{},` +
			`"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}},"experimental":{"x":{"on":true},"y":{}},` +
			`"extensions":{"io.example/z":{"v":1}}}`
	)
	f := &capsMcpd{bridgeMcpd: &bridgeMcpd{
		events: make(chan *mcpdv1.SubscriptionEvent, 16),
		host:   make(chan mcpdv1.Mcpd_HostServer, 1),
		calls:  make(chan string, 16),
	}, caps: map[string]string{"a": capsA, "b": capsB}}
	sock := mcpdtest.Serve(t, f)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"a"}, capsA},
		{[]string{"a", "b"}, merged},
	} {
		for _, era := range hostEras {
			t.Run(era.name+" "+itoa(len(tt.args)), func(t *testing.T) {
				h := startBridgeOf(t, sock, tt.args...)
				var res struct {
					Capabilities map[string]any `json:"capabilities"`
				}
				method, params := "server/discover", ""
				if era.meta == "" {
					method, params = "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}`
				}
				if err := json.Unmarshal(h.mustRequest(era, "1", method, params), &res); err != nil {
					t.Fatal(err)
				}
				var want map[string]any
				if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, res.Capabilities); diff != "" {
					t.Errorf("capabilities (-want +got):\n%s", diff)
				}
				if m := h.request(era, "2", "tasks/get", `"taskId":"t1"`); m["error"] != nil {
					t.Errorf("tasks/get answered %s, want the server's result", m["error"])
				}
			})
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range f.servers {
		if s != "a" {
			t.Errorf("a task request went to %q, want a (the server that declares tasks)", s)
		}
	}
}
