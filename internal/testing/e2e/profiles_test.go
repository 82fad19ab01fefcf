package e2e

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// profileConfig has two fake servers, "a" (legacy) and "b" (modern), that
// both have the fake's tools (echo, ping, stats, sleep, ...), and profiles:
//   - safe: server a only; its echo (description overridden) and log, but
//     not logburst (denied); every other tool hidden;
//   - both: echo and ping of a, echo and stats of b, named on collision;
//   - apart: ping of a, stats of b, named on collision: no clash.
var profileConfig = map[string]any{
	"safe": map[string]any{
		"a": map[string]any{"tools": map[string]any{
			"allow": []string{"echo", "log*"}, "deny": []string{"logb*"},
			"overrides": map[string]any{"echo": map[string]string{"description": "Echo, briefly."}},
		}},
	},
	"both": map[string]any{
		"prefix": "on-collision",
		"a":      map[string]any{"tools": map[string]any{"allow": []string{"echo", "ping"}}},
		"b":      map[string]any{"tools": map[string]any{"allow": []string{"echo", "stats"}}},
	},
	"apart": map[string]any{
		"prefix": "on-collision",
		"a":      map[string]any{"tools": map[string]any{"allow": []string{"ping"}}},
		"b":      map[string]any{"tools": map[string]any{"allow": []string{"stats"}}},
	},
}

// startProfileDaemon starts mcpd with profileConfig and extra flags.
func startProfileDaemon(t *testing.T, extra ...string) *daemon {
	t.Helper()
	bridgeBins(t)
	dir := tempdir.Short(t)
	data, err := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"a": fakeServer("legacy"), "b": fakeServer("modern")},
		"profiles":   profileConfig,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), cfg, extra...)
	d.waitServing()
	return d
}

// toolNames are the names in a ListTools answer, by server.
func toolNames(t *testing.T, resp *mcpdv1.ListToolsResponse) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, s := range resp.GetServers() {
		var items []struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal([]byte(s.GetItemsJson()), &items); err != nil {
			t.Fatalf("server %s items %q: %v", s.GetServer(), s.GetItemsJson(), err)
		}
		for _, it := range items {
			out[s.GetServer()] = append(out[s.GetServer()], it.Name)
		}
	}
	return out
}

// TestProfileGRPC: under the "mcpd-profile" metadata an app sees only the
// profile's servers and tools, and a hidden tool is refused as unknown
// however it is called; the profile shows in status.
func TestProfileGRPC(t *testing.T) {
	d := startProfileDaemon(t)
	c := d.client()
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-profile", "safe", "mcpd-client-name", "profiled-app")

	lt, err := c.ListTools(ctx, &mcpdv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, lt); len(got) != 1 || !slices.Equal(got["a"], []string{"echo", "log"}) {
		t.Fatalf("tools under safe = %v, want a's echo and log only", got)
	}
	if !strings.Contains(lt.GetServers()[0].GetItemsJson(), `"description":"Echo, briefly."`) {
		t.Errorf("echo's description not overridden: %s", lt.GetServers()[0].GetItemsJson())
	}
	// The same without a profile: everything.
	all, err := c.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got := toolNames(t, all); len(got) != 2 || !slices.Contains(got["a"], "sleep") {
		t.Fatalf("tools without a profile = %v", got)
	}

	// A hidden tool: CallTool and SendRequest answer as for an unknown one.
	resp, _, err := callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "a", Tool: "sleep", ArgumentsJson: `{"ms":1}`})
	if err != nil || resp.GetError().GetCode() != -32602 || resp.GetError().GetMessage() != "Unknown tool: sleep" {
		t.Fatalf("CallTool sleep under safe = %v, %v; want -32602 Unknown tool", resp, err)
	}
	stream, err := c.SendRequest(ctx, &mcpdv1.SendRequestRequest{Server: "a", Method: "tools/call", ParamsJson: `{"name":"logburst","arguments":{}}`})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := stream.Recv()
	if err != nil || ev.GetResponse().GetError().GetMessage() != "Unknown tool: logburst" {
		t.Fatalf("SendRequest tools/call logburst = %v, %v", ev, err)
	}
	// tools/list through SendRequest is filtered too.
	stream, err = c.SendRequest(ctx, &mcpdv1.SendRequestRequest{Server: "a", Method: "tools/list"})
	if err != nil {
		t.Fatal(err)
	}
	if ev, err = stream.Recv(); err != nil || strings.Contains(ev.GetResponse().GetResultJson(), `"sleep"`) ||
		!strings.Contains(ev.GetResponse().GetResultJson(), `"echo"`) {
		t.Fatalf("SendRequest tools/list = %v, %v", ev, err)
	}
	// A shown tool works; a server outside the profile does not exist.
	if resp, _, err = callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "a", Tool: "echo", ArgumentsJson: echoArgs("hi")}); err != nil || text(t, resp) != "hi" {
		t.Fatalf("echo under safe = %v, %v", resp, err)
	}
	if _, _, err = callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "b", Tool: "echo", ArgumentsJson: echoArgs("hi")}); status.Code(err) != codes.NotFound {
		t.Fatalf("b under safe: %v, want NOT_FOUND", err)
	}
	ls, err := c.ListServers(ctx, &mcpdv1.ListServersRequest{})
	if err != nil || len(ls.GetServers()) != 1 || ls.GetProfile().GetName() != "safe" || ls.GetProfile().GetPrefix() != "always" {
		t.Fatalf("ListServers under safe = %v, %v", ls, err)
	}
	bad := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-profile", "nope")
	if _, err := c.ListTools(bad, &mcpdv1.ListToolsRequest{}); status.Code(err) != codes.NotFound || !strings.Contains(err.Error(), `unknown profile "nope"`) {
		t.Fatalf("unknown profile: %v", err)
	}

	st := d.status(c)
	var seen bool
	for _, a := range st.GetApps() {
		seen = seen || a.GetProfile() == "safe"
	}
	if !seen || len(st.GetProfiles()) != 3 {
		t.Fatalf("status apps %v profiles %v: want an app under safe and the three profiles", st.GetApps(), st.GetProfiles())
	}
}

// profileBridge connects a go-sdk host to "mcpdctl bridge ARGS...".
func profileBridge(t *testing.T, d *daemon, args ...string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "profile-host", Version: "1.0.0"}, nil)
	cs, err := client.Connect(ctxT(t), &mcp.CommandTransport{Command: bridgeCommand(d, args...)}, nil)
	if err != nil {
		t.Fatalf("connect bridge %v: %v", args, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// hostToolNames lists the tools a host sees, sorted.
func hostToolNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// wantUnknownTool calls a tool the host must not reach.
func wantUnknownTool(t *testing.T, cs *mcp.ClientSession, name, want string) {
	t.Helper()
	res, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"ms": 1}})
	if err == nil {
		t.Fatalf("call %s = %+v, want an error", name, res)
	}
	if !strings.Contains(err.Error(), want) {
		t.Fatalf("call %s: %v, want %q", name, err, want)
	}
}

// TestProfileBridge: mcpdctl bridge --profile serves the profile; the gate
// is mcpd's, so a hidden tool is refused even when the bridge forwards it.
func TestProfileBridge(t *testing.T) {
	d := startProfileDaemon(t)

	cs := profileBridge(t, d, "--profile", "safe")
	if got := hostToolNames(t, cs); !slices.Equal(got, []string{"a__echo", "a__log"}) {
		t.Fatalf("tools through bridge --profile safe = %v", got)
	}
	if got := callText(t, cs, "a__echo", map[string]any{"message": "via bridge"}); got != "via bridge" {
		t.Errorf("a__echo = %q", got)
	}
	// a__sleep is routed by its prefix to a's sleep, which mcpd refuses.
	wantUnknownTool(t, cs, "a__sleep", "Unknown tool: sleep")

	// One server of the profile: names as the server gives them.
	one := profileBridge(t, d, "--profile", "safe", "a")
	if got := hostToolNames(t, one); !slices.Equal(got, []string{"echo", "log"}) {
		t.Fatalf("tools through bridge --profile safe a = %v", got)
	}
	wantUnknownTool(t, one, "sleep", "Unknown tool: sleep")

	// A server outside the profile cannot be bridged.
	cmd := bridgeCommand(d, "--profile", "safe", "b")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if out, err := cmd.Output(); err == nil || !strings.Contains(stderr.String(), `no such server "b" in profile "safe"`) {
		t.Fatalf("bridge --profile safe b: %v %q %q", err, out, stderr.String())
	}
}

// TestProfileOnCollision: on-collision prefixes only a name two servers
// share, and routes the bare names to their server; --prefix always
// overrides the profile.
func TestProfileOnCollision(t *testing.T) {
	d := startProfileDaemon(t)

	both := profileBridge(t, d, "--profile", "both")
	if got := hostToolNames(t, both); !slices.Equal(got, []string{"a__echo", "b__echo", "ping", "stats"}) {
		t.Fatalf("tools of both = %v, want echo prefixed, ping and stats bare", got)
	}
	if got := callText(t, both, "b__echo", map[string]any{"message": "to b"}); got != "to b" {
		t.Errorf("b__echo = %q", got)
	}
	if got := callText(t, both, "stats", nil); !strings.Contains(got, `"methods"`) {
		t.Errorf("stats = %q", got)
	}
	wantUnknownTool(t, both, "echo", `unknown tool "echo"`)

	apart := profileBridge(t, d, "--profile", "apart")
	if got := hostToolNames(t, apart); !slices.Equal(got, []string{"ping", "stats"}) {
		t.Fatalf("tools of apart = %v, want ping and stats as the servers name them", got)
	}
	if got := callText(t, apart, "stats", nil); !strings.Contains(got, `"methods"`) {
		t.Errorf("stats = %q", got)
	}

	always := profileBridge(t, d, "--profile", "apart", "--prefix", "always")
	if got := hostToolNames(t, always); !slices.Equal(got, []string{"a__ping", "b__stats"}) {
		t.Fatalf("tools of apart with --prefix always = %v", got)
	}
}

// TestProfileHTTPFace: /profiles/NAME/mcp serves the profile to an HTTP
// host, with the same gate.
func TestProfileHTTPFace(t *testing.T) {
	d := startProfileDaemon(t, "--http-listen", "127.0.0.1:0")
	urls, reason := httpStatus(t, d)
	var safeURL string
	for _, u := range urls {
		if strings.HasSuffix(u, "/profiles/safe/mcp") {
			safeURL = u
		}
	}
	if safeURL == "" {
		t.Fatalf("status URLs %v (%q) lack the profile's", urls, reason)
	}
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			client := mcp.NewClient(&mcp.Implementation{Name: "http-host", Version: "1"}, nil)
			cs, err := client.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: safeURL, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if got := hostToolNames(t, cs); !slices.Equal(got, []string{"a__echo", "a__log"}) {
				t.Fatalf("tools at %s = %v", safeURL, got)
			}
			if got := callText(t, cs, "a__echo", map[string]any{"message": "over http"}); got != "over http" {
				t.Errorf("a__echo = %q", got)
			}
			wantUnknownTool(t, cs, "a__sleep", "Unknown tool: sleep")
		})
	}
	resp, err := http.Post(strings.Replace(safeURL, "/safe/", "/nope/", 1), "application/json",
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `unknown profile \"nope\"`) {
		t.Fatalf("unknown profile endpoint = %d %s", resp.StatusCode, body)
	}
}

// TestProfileToolsCommand: mcpdctl tools --profile shows the host's view
// and what the profile saves in estimated tokens.
func TestProfileToolsCommand(t *testing.T) {
	d := startProfileDaemon(t)
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(mcpdctlBin, append([]string{"--socket", d.socket, "tools"}, args...)...)
		cmd.Env = daemonEnv()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcpdctl tools %v: %v: %s", args, err, out)
		}
		return string(out)
	}
	var view struct {
		Profile string `json:"profile"`
		Prefix  string `json:"prefix"`
		Tools   []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
		Tokens  int `json:"tokens"`
		Without struct {
			Tools  int `json:"tools"`
			Tokens int `json:"tokens"`
		} `json:"without_profile"`
	}
	out := run("--profile", "both", "--json")
	if err := json.Unmarshal([]byte(out), &view); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	var names []string
	for _, tl := range view.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if view.Prefix != "on-collision" || !slices.Equal(names, []string{"a__echo", "b__echo", "ping", "stats"}) {
		t.Fatalf("view = %+v", view)
	}
	if view.Tokens <= 0 || view.Without.Tools <= len(view.Tools) || view.Tokens >= view.Without.Tokens {
		t.Fatalf("tokens %d of %d tools vs %d of %d without: want fewer", view.Tokens, len(view.Tools), view.Without.Tokens, view.Without.Tools)
	}
	table := run("--profile", "safe")
	if !strings.Contains(table, "a__echo") || !strings.Contains(table, "Echo, briefly.") || strings.Contains(table, "sleep") ||
		!strings.Contains(table, `profile "safe" (prefix always): 2 tools, ~`) || !strings.Contains(table, "fewer") {
		t.Fatalf("table:\n%s", table)
	}
}

// TestProfileSubscribeURIHiddenOnOneServer: under a profile, a resource
// URI one watched server shows and another hides is watched on the first
// only; one that every watched server hides is refused as not found.
func TestProfileSubscribeURIHiddenOnOneServer(t *testing.T) {
	skipShort(t)
	d := startProfileDaemon(t)
	profiles := maps.Clone(profileConfig)
	profiles["res"] = map[string]any{
		"a": map[string]any{"resources": map[string]any{"allow": []string{"fake://a/*"}}},
		"b": map[string]any{"resources": map[string]any{"allow": []string{"fake://b/*"}}},
	}
	writeAndReload(t, d, map[string]any{"mcpServers": map[string]any{"a": fakeServer("legacy"), "b": fakeServer("modern")}, "profiles": profiles})
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-profile", "res")

	st, err := d.client().Subscribe(ctx, &mcpdv1.SubscribeRequest{Servers: []string{"a", "b"}, ResourceUris: []string{"fake://a/x"}})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := st.Recv()
	if err != nil || ev.GetAck() == nil {
		t.Fatalf("subscribe to a's resource under res: %v, %v; want an acknowledgement", ev, err)
	}
	for _, a := range ev.GetAck().GetServers() {
		if a.GetServer() == "b" && slices.Contains(a.GetResourceUris(), "fake://a/x") {
			t.Errorf("b, which hides fake://a/x, acknowledged it: %v", a)
		}
	}

	st, err = d.client().Subscribe(ctx, &mcpdv1.SubscribeRequest{Servers: []string{"a", "b"}, ResourceUris: []string{"fake://c/x"}})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("subscribe to a resource both servers hide: %v, want NOT_FOUND", err)
	}
}

// TestBridgeHiddenURIDoesNotStopItsStream: a host of a profile bridge
// subscribes to a resource the profile shows and to one it hides
// everywhere; the hidden one is refused and told, the other watched, and
// when a reload gives the profile another server the bridge's stream
// opens again for both servers instead of being refused for ever.
func TestBridgeHiddenURIDoesNotStopItsStream(t *testing.T) {
	skipShort(t)
	d := startProfileDaemon(t)
	servers := map[string]any{"a": fakeServer("legacy"), "b": fakeServer("modern")}
	profiles := maps.Clone(profileConfig)
	profiles["watch"] = map[string]any{"a": map[string]any{"resources": map[string]any{"allow": []string{"fake://a/*"}}}}
	writeAndReload(t, d, map[string]any{"mcpServers": servers, "profiles": profiles})
	cmd := bridgeCommand(d, "--profile", "watch")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	host := connectHost(t, cmd, "watch-host", true, nil)
	for _, uri := range []string{"fake://a/1", "fake://hidden/1"} {
		if err := host.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	// The bridge's stream (the only app's), by the servers and URIs it
	// watches.
	bridgeStream := func() (*mcpdv1.SubscriptionStatus, error) {
		st, err := d.client().GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{})
		for _, s := range st.GetSubscriptions() {
			if strings.Contains(s.GetAppName(), "bridge") {
				return s, err
			}
		}
		return nil, err
	}
	poll(t, "the shown resource watched, the hidden one refused", func() (bool, error) {
		s, err := bridgeStream()
		return s != nil && s.GetResourceUris() == 1 && strings.Contains(stderr.String(), `resource "fake://hidden/1" is not watched`), err
	})

	profiles["watch"] = map[string]any{
		"a": map[string]any{"resources": map[string]any{"allow": []string{"fake://a/*"}}},
		"b": map[string]any{"resources": map[string]any{"allow": []string{"fake://b/*"}}},
	}
	writeAndReload(t, d, map[string]any{"mcpServers": servers, "profiles": profiles})
	poll(t, "the bridge's stream open again on a and b", func() (bool, error) {
		s, err := bridgeStream()
		// One URI: a's, watched on a; never the hidden one.
		return s != nil && slices.Equal(s.GetServers(), []string{"a", "b"}) && s.GetResourceUris() == 1, err
	})
}
