package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/testing/protocmp"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The daemon's own RPCs: operating servers, status, health and reflection.

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
	wantLogs := []*mcpdv1.LogLine{{TimeUnixMs: 1000, Text: fmt.Sprintf("n=%d", core.DefaultLogLines), Truncated: true, Pid: 42}}
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
