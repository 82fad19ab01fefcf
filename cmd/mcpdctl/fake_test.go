package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// bigResultSize is the text size of the "big" tool's result.
const bigResultSize = 6 << 20

// fakeMcpd is a canned mcpd: a real gRPC server on a real Unix socket that
// answers from fixed data, so the CLI's output is deterministic.
type fakeMcpd struct {
	mcpdv1.UnimplementedMcpdServer

	mu       sync.Mutex // guards following
	metadata []metadata.MD
	options  []*mcpdv1.CallOptions // of every unary request that has them
	calls    []*mcpdv1.CallToolRequest
	prompts  []*mcpdv1.GetPromptRequest
	// reloadBad and followers serve ops_test.go.
	reloadBad bool
	followers int
}

var _ mcpdv1.McpdServer = (*fakeMcpd)(nil)

// startFake serves a fakeMcpd on a socket in a fresh temporary directory
// and returns the socket path; the server is stopped when the test ends.
func startFake(t *testing.T) (*fakeMcpd, string) {
	t.Helper()
	f := &fakeMcpd{}
	return f, mcpdtest.Serve(t, f, grpc.UnaryInterceptor(f.recordUnary), grpc.StreamInterceptor(f.recordStream))
}

func (f *fakeMcpd) record(ctx context.Context) {
	md, _ := metadata.FromIncomingContext(ctx)
	f.mu.Lock()
	f.metadata = append(f.metadata, md)
	f.mu.Unlock()
}

func (f *fakeMcpd) recordUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	f.record(ctx)
	if r, ok := req.(interface{ GetOptions() *mcpdv1.CallOptions }); ok {
		f.mu.Lock()
		f.options = append(f.options, r.GetOptions())
		f.mu.Unlock()
	}
	return h(ctx, req)
}

func (f *fakeMcpd) recordStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	f.record(ss.Context())
	return h(srv, ss)
}

func (f *fakeMcpd) lastOptions() *mcpdv1.CallOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.options) == 0 {
		return nil
	}
	return f.options[len(f.options)-1]
}

func (f *fakeMcpd) lastMetadata() metadata.MD {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.metadata) == 0 {
		return nil
	}
	return f.metadata[len(f.metadata)-1]
}

// The canned servers: weather is ready (modern), notes is ready (legacy),
// looping is in a crash loop, idle was never started.
func cannedServers() []*mcpdv1.ServerStatus {
	return []*mcpdv1.ServerStatus{
		{
			Name: "weather", State: mcpdv1.ServerState_SERVER_STATE_READY, Pid: 4242,
			StartedAtUnixMs: 1_700_000_000_000, UptimeMs: 3_723_000, Restarts: 1,
			Era: "modern", ProtocolVersion: "2026-07-28",
			ServerInfoJson: `{"name":"weather-server","version":"1.2.0"}`,
			Autostart:      true, CallsTotal: 12, CapabilitiesJson: `{"tools":{"listChanged":true}}`,
			Command: "weather-server --stdio",
		},
		{
			Name: "notes", State: mcpdv1.ServerState_SERVER_STATE_READY, Pid: 5151,
			StartedAtUnixMs: 1_700_000_100_000, UptimeMs: 42_000,
			Era: "legacy", ProtocolVersion: "2025-11-25",
			ServerInfoJson: `{"name":"notes","version":"0.1.0"}`,
			Command:        "node notes.js",
		},
		{
			Name: "looping", State: mcpdv1.ServerState_SERVER_STATE_CRASHLOOP, Restarts: 5,
			LastError: "exited 5 times in 60s\nlast stderr: boom", LastExit: "exit status 1",
			LastStderrLine: "boom", NextRestartInMs: 30_000, Command: "false",
		},
		{
			Name: "idle", State: mcpdv1.ServerState_SERVER_STATE_STOPPED, Command: "idle-server",
		},
	}
}

func findCanned(name string) *mcpdv1.ServerStatus {
	for _, s := range cannedServers() {
		if s.GetName() == name {
			return s
		}
	}
	return nil
}

func (f *fakeMcpd) GetStatus(context.Context, *mcpdv1.GetStatusRequest) (*mcpdv1.GetStatusResponse, error) {
	servers := cannedServers()
	for _, s := range servers {
		if s.GetName() == "weather" {
			s.ToolChangesPending = 2 // under pin "enforce", awaiting mcpdctl tools approve
		}
	}
	return &mcpdv1.GetStatusResponse{
		AuditPath: "/home/u/.local/state/mcpd/audit.jsonl",
		Version:   "1.0.0-test", Pid: 777, UptimeMs: 90_061_000,
		ConfigPath:  "/home/u/.config/mcpd/config.json",
		ConfigError: `config.json:12: "mcpServers.x.command" must be a string`,
		SocketPath:  "/run/user/1000/mcpd/mcpd.sock",
		Servers:     servers,
		Apps: []*mcpdv1.AppStatus{
			{Name: "vscode", Version: "1.99", Pid: 3030, ConnectedAtUnixMs: fakeNow.UnixMilli() - 300_000},
		},
	}, nil
}

func (f *fakeMcpd) ListServers(context.Context, *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	return &mcpdv1.ListServersResponse{Servers: cannedServers()}, nil
}

func (f *fakeMcpd) lifecycle(name string, state mcpdv1.ServerState) (*mcpdv1.ServerStatus, error) {
	if name == "looping" {
		// What mcpd says for a server it refuses to start.
		return nil, status.Error(codes.Unavailable, `server "looping" is in a crash loop: exit status 1 (last stderr: boom)`)
	}
	s := findCanned(name)
	if s == nil {
		return nil, status.Errorf(codes.NotFound, "unknown server %q", name)
	}
	s.State = state
	if state == mcpdv1.ServerState_SERVER_STATE_STOPPED {
		s.Pid, s.UptimeMs = 0, 0
	}
	return s, nil
}

func (f *fakeMcpd) StartServer(_ context.Context, r *mcpdv1.StartServerRequest) (*mcpdv1.StartServerResponse, error) {
	s, err := f.lifecycle(r.GetName(), mcpdv1.ServerState_SERVER_STATE_READY)
	return &mcpdv1.StartServerResponse{Server: s}, err
}

func (f *fakeMcpd) StopServer(_ context.Context, r *mcpdv1.StopServerRequest) (*mcpdv1.StopServerResponse, error) {
	s, err := f.lifecycle(r.GetName(), mcpdv1.ServerState_SERVER_STATE_STOPPED)
	return &mcpdv1.StopServerResponse{Server: s}, err
}

func (f *fakeMcpd) RestartServer(_ context.Context, r *mcpdv1.RestartServerRequest) (*mcpdv1.RestartServerResponse, error) {
	s, err := f.lifecycle(r.GetName(), mcpdv1.ServerState_SERVER_STATE_READY)
	return &mcpdv1.RestartServerResponse{Server: s}, err
}

func (f *fakeMcpd) GetLogs(_ context.Context, r *mcpdv1.GetLogsRequest) (*mcpdv1.GetLogsResponse, error) {
	if findCanned(r.GetName()) == nil {
		return nil, status.Errorf(codes.NotFound, "unknown server %q", r.GetName())
	}
	all := []*mcpdv1.LogLine{
		{TimeUnixMs: 1_700_000_000_001, Pid: 4242, Text: "listening on stdio"},
		{TimeUnixMs: 1_700_000_000_002, Pid: 4242, Text: "fetching forecast"},
		{TimeUnixMs: 1_700_000_000_003, Pid: 4242, Text: "a very long line", Truncated: true},
	}
	if n := int(r.GetLines()); n > 0 && n < len(all) {
		all = all[len(all)-n:]
	}
	return &mcpdv1.GetLogsResponse{Lines: all}, nil
}

// serverLists answers a list RPC from per-server canned parts: weather and
// notes answer, looping is unavailable, idle has no such capability.
func serverLists(server string, items map[string]string) ([]*mcpdv1.ServerList, error) {
	all := []*mcpdv1.ServerList{
		{Server: "weather", ItemsJson: items["weather"], Cache: mcpdv1.CacheStatus_CACHE_STATUS_HIT},
		{Server: "looping", Unavailable: `server "looping" is unavailable: crash loop: exit status 1 (last stderr: boom)`},
		{Server: "notes", ItemsJson: items["notes"], Cache: mcpdv1.CacheStatus_CACHE_STATUS_FETCHED},
		{Server: "idle", Error: &mcpdv1.McpError{Code: -32601, Message: "Method not found"}},
	}
	if server == "" {
		return all, nil
	}
	for _, l := range all {
		if l.GetServer() == server {
			return []*mcpdv1.ServerList{l}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "unknown server %q", server)
}

func (f *fakeMcpd) ListTools(_ context.Context, r *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	lists, err := serverLists(r.GetServer(), map[string]string{
		"weather": `[{"name":"forecast","title":"Forecast","description":"Get the forecast for a city.\nUses the national service.","inputSchema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"annotations":{"readOnlyHint":true},"_meta":{"x-vendor":{"a":1}}},` +
			`{"name":"alerts","description":"List the active weather alerts for a region, ordered by severity, including ones that have expired in the last hour","inputSchema":{"type":"object"}}]`,
		"notes": `[{"name":"add_note","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"}}]`,
	})
	return &mcpdv1.ListToolsResponse{Servers: lists}, err
}

func (f *fakeMcpd) ListPrompts(_ context.Context, r *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	lists, err := serverLists(r.GetServer(), map[string]string{
		"weather": `[{"name":"plan_trip","description":"Plan a trip around the weather","arguments":[{"name":"city","required":true},{"name":"days"}]}]`,
		"notes":   `[]`,
	})
	return &mcpdv1.ListPromptsResponse{Servers: lists}, err
}

func (f *fakeMcpd) ListResources(_ context.Context, r *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	lists, err := serverLists(r.GetServer(), map[string]string{
		"weather": `[{"uri":"weather://stations","name":"stations","mimeType":"application/json","size":2048}]`,
		"notes":   `[{"uri":"file:///notes/todo.md","name":"todo","description":"Things to do"}]`,
	})
	return &mcpdv1.ListResourcesResponse{Servers: lists}, err
}

func (f *fakeMcpd) ListResourceTemplates(_ context.Context, r *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	lists, err := serverLists(r.GetServer(), map[string]string{
		"weather": `[{"uriTemplate":"weather://city/{name}","name":"city","mimeType":"application/json"}]`,
	})
	return &mcpdv1.ListResourceTemplatesResponse{Servers: lists}, err
}

func (f *fakeMcpd) ReadResource(_ context.Context, r *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	if findCanned(r.GetServer()) == nil {
		return nil, status.Errorf(codes.NotFound, "unknown server %q", r.GetServer())
	}
	resp := &mcpdv1.McpResponse{Server: r.GetServer()}
	switch r.GetUri() {
	case "file:///notes/todo.md":
		resp.ResultJson = `{"contents":[{"uri":"file:///notes/todo.md","mimeType":"text/markdown","text":"- buy milk\n- call mum\n"},{"uri":"file:///notes/logo.png","mimeType":"image/png","blob":"iVBORw0KGgoAAAANSUhEUg=="}]}`
	default:
		resp.Error = &mcpdv1.McpError{Code: -32602, Message: "Resource not found", DataJson: `{"uri":"` + r.GetUri() + `"}`}
	}
	return resp, nil
}

func (f *fakeMcpd) GetPrompt(_ context.Context, r *mcpdv1.GetPromptRequest) (*mcpdv1.McpResponse, error) {
	f.mu.Lock()
	f.prompts = append(f.prompts, r)
	f.mu.Unlock()
	if findCanned(r.GetServer()) == nil {
		return nil, status.Errorf(codes.NotFound, "unknown server %q", r.GetServer())
	}
	if r.GetName() != "plan_trip" {
		return &mcpdv1.McpResponse{Server: r.GetServer(), Error: &mcpdv1.McpError{Code: -32602, Message: "unknown prompt " + r.GetName()}}, nil
	}
	var args map[string]string
	_ = json.Unmarshal([]byte(r.GetArgumentsJson()), &args)
	return &mcpdv1.McpResponse{Server: r.GetServer(), ResultJson: `{"description":"Plan a trip","messages":[` +
		`{"role":"user","content":{"type":"text","text":"Plan ` + args["days"] + ` days in ` + args["city"] + `."}},` +
		`{"role":"assistant","content":{"type":"image","mimeType":"image/png","data":"AAAA"}}]}`}, nil
}

func (f *fakeMcpd) CallTool(r *mcpdv1.CallToolRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	f.mu.Lock()
	f.calls = append(f.calls, r)
	f.mu.Unlock()
	if findCanned(r.GetServer()) == nil {
		return status.Errorf(codes.NotFound, "unknown server %q", r.GetServer())
	}
	respond := func(resp *mcpdv1.McpResponse) error {
		resp.Server = r.GetServer()
		return stream.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{Response: resp}})
	}
	switch r.GetTool() {
	case "echo":
		// Echoes the arguments it got, so tests see what the CLI sent.
		text, _ := json.Marshal(r.GetArgumentsJson())
		return respond(&mcpdv1.McpResponse{ResultJson: `{"content":[{"type":"text","text":` + string(text) + `}]}`})
	case "forecast":
		if strings.Contains(r.GetArgumentsJson(), "Atlantis") {
			// A listed tool's own failure.
			return respond(&mcpdv1.McpResponse{ResultJson: `{"content":[{"type":"text","text":"city not found: Atlantis"}],"isError":true}`})
		}
		var token struct {
			ProgressToken string `json:"progressToken"`
		}
		_ = json.Unmarshal([]byte(r.GetMetaJson()), &token)
		events := []*mcpdv1.CallToolEvent{
			{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: `{"progressToken":"` + token.ProgressToken + `","progress":3,"total":10,"message":"fetching stations"}`}},
			{Event: &mcpdv1.CallToolEvent_MessageJson{MessageJson: `{"level":"info","logger":"weather","data":"cache cold"}`}},
			{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: `{"progressToken":"` + token.ProgressToken + `","progress":7.5}`}},
		}
		for _, ev := range events {
			if err := stream.Send(ev); err != nil {
				return err
			}
		}
		return respond(&mcpdv1.McpResponse{ResultJson: `{"resultType":"complete","content":[{"type":"text","text":"Sunny, 21°C"},{"type":"image","mimeType":"image/png","data":"iVBORw0KGgo="},{"type":"resource_link","uri":"weather://city/Paris","name":"Paris"},{"type":"resource","resource":{"uri":"weather://raw","mimeType":"text/plain","text":"raw: 21C"}}],"structuredContent":{"temp":21}}`})
	case "big":
		// A result larger than gRPC's default 4 MiB receive limit.
		return respond(&mcpdv1.McpResponse{ResultJson: `{"content":[{"type":"text","text":"` + strings.Repeat("x", bigResultSize) + `"}]}`})
	case "structured":
		return respond(&mcpdv1.McpResponse{ResultJson: `{"content":[],"structuredContent":{"temp":21,"unit":"C"}}`})
	case "array":
		// A result that is not an object.
		return respond(&mcpdv1.McpResponse{ResultJson: `[1,2]`})
	case "badcontent":
		return respond(&mcpdv1.McpResponse{ResultJson: `{"content":"Sunny"}`})
	case "alerts":
		// A listed tool called with bad arguments.
		return respond(&mcpdv1.McpResponse{Error: &mcpdv1.McpError{Code: -32602, Message: "Invalid params: region is required"}})
	case "add_notes":
		// An unlisted tool, answered the way some servers do: a result.
		return respond(&mcpdv1.McpResponse{ResultJson: `{"content":[{"type":"text","text":"Unknown tool: add_notes"}],"isError":true}`})
	case "asks":
		return respond(&mcpdv1.McpResponse{ResultJson: `{"resultType":"input_required","inputRequests":{"login":{"method":"elicitation/create","params":{"message":"who are you?"}}},"requestState":"abc"}`})
	case "slow":
		// Answers nothing until the caller gives up.
		<-stream.Context().Done()
		return stream.Context().Err()
	default:
		return respond(&mcpdv1.McpResponse{Error: &mcpdv1.McpError{Code: -32602, Message: "Unknown tool: " + r.GetTool()}})
	}
}
