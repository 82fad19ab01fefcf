package e2e

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/metadata"

	"github.com/mcpd-dev/mcpd/internal/audit"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// writeAndReload writes cfg to d's config file and reloads it through the
// API, which applies it before answering.
func writeAndReload(t *testing.T, d *daemon, cfg map[string]any) {
	t.Helper()
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	saveAsEditor(t, d.config, data)
	rr, err := d.client().ReloadConfig(ctxT(t), &mcpdv1.ReloadConfigRequest{})
	if err != nil || !rr.GetApplied() {
		t.Fatalf("ReloadConfig = %v, %v", rr, err)
	}
}

// auditRecords are the records of the live log and its rotated files.
func auditRecords(t *testing.T, path string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, p := range []string{path + ".2", path + ".1", path} {
		if _, err := os.Stat(p); err == nil {
			out = append(out, readAudit(t, p)...)
		}
	}
	return out
}

// TestReloadAppliesAudit: a reload turns the audit log off and on, and
// applies its arguments, maxSize and keep to the calls that follow.
func TestReloadAppliesAudit(t *testing.T) {
	skipShort(t)
	d, path := startAuditDaemon(t)
	c := d.client()
	call := func(msg string) {
		t.Helper()
		if _, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "fk", Tool: "echo", ArgumentsJson: echoArgs(msg)}); err != nil {
			t.Fatal(err)
		}
	}
	servers := map[string]any{"fk": fakeServer("legacy")}
	call("first")
	if n := len(auditRecords(t, path)); n != 1 {
		t.Fatalf("%d records, want 1", n)
	}

	writeAndReload(t, d, map[string]any{"mcpServers": servers, "audit": map[string]any{"enabled": false}})
	call("while off")
	if n := len(auditRecords(t, path)); n != 1 {
		t.Fatalf("%d records after the audit log was turned off, want 1", n)
	}
	st, err := c.GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{})
	if err != nil || st.GetAuditPath() != "" {
		t.Fatalf("status audit path %q (%v) while off", st.GetAuditPath(), err)
	}

	writeAndReload(t, d, map[string]any{"mcpServers": servers,
		"audit": map[string]any{"enabled": true, "arguments": false, "maxSize": 700, "keep": 1}})
	for _, m := range []string{"a", "b", "c", "d"} {
		call("on again " + m)
	}
	recs := auditRecords(t, path)
	for _, r := range recs {
		if len(r.Args) > 0 {
			t.Errorf("record %+v has arguments: the reload said not to record them", r)
		}
	}
	if _, err := os.Stat(path + ".1"); err != nil {
		t.Errorf("no rotated file with maxSize 700: %v", err)
	}
	if _, err := os.Stat(path + ".2"); !os.IsNotExist(err) {
		t.Errorf("a second rotated file with keep 1: %v", err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() > 700 {
		t.Errorf("live file size %v (%v), want at most 700", st.Size(), err)
	}

	writeAndReload(t, d, map[string]any{"mcpServers": servers, "audit": map[string]any{"arguments": true, "maxSize": 1 << 20}})
	call("with args")
	recs = auditRecords(t, path)
	if last := recs[len(recs)-1]; echoMessage(last) != "with args" {
		t.Fatalf("last record %+v, want the call's arguments", last)
	}
}

// profileEndpoint is the URL of /profiles/NAME/mcp from status.
func profileEndpoint(t *testing.T, d *daemon, name string) string {
	t.Helper()
	urls, reason := httpStatus(t, d)
	for _, u := range urls {
		if strings.HasSuffix(u, "/profiles/"+name+"/mcp") {
			return u
		}
	}
	t.Fatalf("status URLs %v (%q) lack profile %s's", urls, reason, name)
	return ""
}

// TestReloadProfilesOnHTTP: a reload reaches the HTTP face's running
// sessions and shared bridges: a removed profile's endpoint answers 404
// and its session ends, and a changed prefix mode names the next lists.
func TestReloadProfilesOnHTTP(t *testing.T) {
	skipShort(t)
	d := startProfileDaemon(t, "--http-listen", "127.0.0.1:0")
	bothURL, apartURL := profileEndpoint(t, d, "both"), profileEndpoint(t, d, "apart")
	connect := func(url, era string) *mcp.ClientSession {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: "reload-host", Version: "1"}, nil)
		cs, err := client.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1},
			&mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	eras := []string{"2025-11-25", "2026-07-28"}
	var both, apart []*mcp.ClientSession
	for _, era := range eras {
		both = append(both, connect(bothURL, era))
		apart = append(apart, connect(apartURL, era))
	}
	for i, cs := range both {
		if got := hostToolNames(t, cs); !slices.Equal(got, []string{"a__echo", "b__echo", "ping", "stats"}) {
			t.Fatalf("%s: tools of both = %v", eras[i], got)
		}
		hostToolNames(t, apart[i])
	}

	profiles := map[string]any{}
	for k, v := range profileConfig {
		profiles[k] = v
	}
	delete(profiles, "apart")
	bothAlways := map[string]any{}
	for k, v := range profileConfig["both"].(map[string]any) {
		bothAlways[k] = v
	}
	bothAlways["prefix"] = "always"
	profiles["both"] = bothAlways
	writeAndReload(t, d, map[string]any{
		"mcpServers": map[string]any{"a": fakeServer("legacy"), "b": fakeServer("modern")},
		"profiles":   profiles,
	})

	for i, cs := range both {
		if got := hostToolNames(t, cs); !slices.Equal(got, []string{"a__echo", "a__ping", "b__echo", "b__stats"}) {
			t.Errorf("%s: tools of both after its prefix became always = %v", eras[i], got)
		}
		if got := callText(t, cs, "a__ping", nil); got == "" {
			t.Errorf("%s: a__ping answered nothing", eras[i])
		}
	}
	for i, cs := range apart {
		if _, err := cs.ListTools(ctxT(t), nil); err == nil {
			t.Errorf("%s: a host of the removed profile still lists its tools", eras[i])
		}
	}
	resp, err := http.Post(apartURL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `unknown profile \"apart\"`) {
		t.Fatalf("removed profile's endpoint = %d %s, want 404", resp.StatusCode, body)
	}
}

// TestReloadProfileRulesTellHosts: a reload that changes which tools a
// profile shows tells the hosts and apps under that profile that the
// server's tools changed (mcpdctl bridge and the HTTP face, both eras, and
// a gRPC stream),
// and their next list is the new view; a profile the reload left alone
// hears nothing.
func TestReloadProfileRulesTellHosts(t *testing.T) {
	skipShort(t)
	d := startProfileDaemon(t, "--http-listen", "127.0.0.1:0")
	type host struct {
		name    string
		cs      *mcp.ClientSession
		changed chan struct{}
	}
	var hosts []host
	add := func(name string, connect func(opts *mcp.ClientOptions) *mcp.ClientSession) {
		h := host{name: name, changed: make(chan struct{}, 16)}
		h.cs = connect(&mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case h.changed <- struct{}{}:
				default:
				}
			},
		})
		if got := hostToolNames(t, h.cs); !slices.Equal(got, []string{"a__echo", "a__log"}) {
			t.Fatalf("%s: tools of safe = %v", h.name, got)
		}
		hosts = append(hosts, h)
	}
	for _, legacy := range []bool{true, false} {
		name := "bridge, " + map[bool]string{true: "legacy", false: "modern"}[legacy]
		add(name, func(opts *mcp.ClientOptions) *mcp.ClientSession {
			return connectHost(t, bridgeCommand(d, "--profile", "safe"), "safe-host", legacy, opts)
		})
	}
	safeURL := profileEndpoint(t, d, "safe")
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		add("HTTP face, "+era, func(opts *mcp.ClientOptions) *mcp.ClientSession {
			client := mcp.NewClient(&mcp.Implementation{Name: "safe-http-host", Version: "1"}, opts)
			cs, err := client.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: safeURL, MaxRetries: -1},
				&mcp.ClientSessionOptions{ProtocolVersion: era})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs
		})
	}
	watch := func(profile string) mcpdv1.Mcpd_SubscribeClient {
		t.Helper()
		ctx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-profile", profile)
		st, err := d.client().Subscribe(ctx, &mcpdv1.SubscribeRequest{ToolsListChanged: true})
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := st.Recv(); err != nil || ev.GetAck() == nil {
			t.Fatalf("%s: first event %v, %v; want the ack", profile, ev, err)
		}
		return st
	}
	safeApp, bothApp := watch("safe"), watch("both")
	// The bridges' own streams are open before the reload.
	poll(t, "the bridges' subscriptions", func() (bool, error) {
		st, err := d.client().GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{})
		return len(st.GetSubscriptions()) >= 6, err
	})

	profiles := func(safeTools, bothB []string) map[string]any {
		out := map[string]any{}
		for k, v := range profileConfig {
			out[k] = v
		}
		out["safe"] = map[string]any{"a": map[string]any{"tools": map[string]any{"allow": safeTools, "deny": []string{"logb*"}}}}
		out["both"] = map[string]any{"prefix": "on-collision",
			"a": map[string]any{"tools": map[string]any{"allow": []string{"echo", "ping"}}},
			"b": map[string]any{"tools": map[string]any{"allow": bothB}}}
		return out
	}
	servers := map[string]any{"a": fakeServer("legacy"), "b": fakeServer("modern")}
	// safe: ping as well; its echo loses the description override.
	writeAndReload(t, d, map[string]any{"mcpServers": servers, "profiles": profiles([]string{"echo", "log*", "ping"}, []string{"echo", "stats"})})

	for _, h := range hosts {
		select {
		case <-h.changed:
		case <-ctxT(t).Done():
			t.Fatalf("%s: no tools/list_changed after the reload", h.name)
		}
		if got := hostToolNames(t, h.cs); !slices.Equal(got, []string{"a__echo", "a__log", "a__ping"}) {
			t.Errorf("%s: tools of safe after the reload = %v", h.name, got)
		}
	}
	ev, err := safeApp.Recv()
	if err != nil || ev.GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED ||
		ev.GetServer() != "a" || !ev.GetSynthetic() {
		t.Fatalf("safe's app got %v, %v; want a synthetic tools list change of a", ev, err)
	}

	// both changes only now: its first event is this reload's, of b.
	writeAndReload(t, d, map[string]any{"mcpServers": servers, "profiles": profiles([]string{"echo", "log*", "ping"}, []string{"echo", "stats", "ping"})})
	ev, err = bothApp.Recv()
	if err != nil || ev.GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED || ev.GetServer() != "b" {
		t.Fatalf("both's app got %v, %v; want the tools list change of b (and none from safe's reload)", ev, err)
	}
}

// TestReloadProfileReachesBridge: mcpdctl bridge --profile follows what a
// reload does to its profile beyond the rules: a new prefix mode names its
// next lists, a server taken out of the profile leaves them, and a removed
// profile is reported; each host is told its lists changed.
func TestReloadProfileReachesBridge(t *testing.T) {
	skipShort(t)
	d := startProfileDaemon(t)
	changed := map[string]chan struct{}{}
	hosts := map[string]*mcp.ClientSession{}
	for _, p := range []string{"both", "apart", "safe"} {
		ch := make(chan struct{}, 16)
		changed[p] = ch
		hosts[p] = connectHost(t, bridgeCommand(d, "--profile", p), p+"-host", true, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
				select {
				case ch <- struct{}{}:
				default:
				}
			},
		})
		hostToolNames(t, hosts[p])
	}
	poll(t, "the bridges' subscriptions", func() (bool, error) {
		st, err := d.client().GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{})
		return len(st.GetSubscriptions()) >= 3, err
	})

	profiles := map[string]any{
		"both": map[string]any{"prefix": "always",
			"a": map[string]any{"tools": map[string]any{"allow": []string{"echo", "ping"}}},
			"b": map[string]any{"tools": map[string]any{"allow": []string{"echo", "stats"}}}},
		"apart": map[string]any{"prefix": "on-collision",
			"a": map[string]any{"tools": map[string]any{"allow": []string{"ping"}}}},
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{"a": fakeServer("legacy"), "b": fakeServer("modern")},
		"profiles":   profiles,
	}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cr, err := d.client().CheckConfig(ctxT(t), &mcpdv1.CheckConfigRequest{Path: d.config, Content: data})
	if diff := cr.GetDiff(); err != nil || !slices.Equal(diff.GetProfilesChanged(), []string{"apart", "both"}) ||
		!slices.Equal(diff.GetProfilesRemoved(), []string{"safe"}) || len(diff.GetProfilesAdded()) != 0 {
		t.Fatalf("config check of the profiles' changes = %v, %v", diff, err)
	}
	writeAndReload(t, d, cfg)
	for _, p := range []string{"both", "apart", "safe"} {
		select {
		case <-changed[p]:
		case <-ctxT(t).Done():
			t.Fatalf("%s: no tools/list_changed after the reload", p)
		}
	}
	// The bridge learns the new prefix mode on its own after the event,
	// and tells the host again: the names follow.
	poll(t, "both's names by the new prefix mode", func() (bool, error) {
		return slices.Equal(hostToolNames(t, hosts["both"]), []string{"a__echo", "a__ping", "b__echo", "b__stats"}), nil
	})
	if got := hostToolNames(t, hosts["apart"]); !slices.Equal(got, []string{"ping"}) {
		t.Errorf("apart after b left it: %v", got)
	}
	if res, err := hosts["safe"].ListTools(ctxT(t), nil); err == nil && len(res.Tools) > 0 {
		t.Errorf("the removed profile safe still lists %d tools", len(res.Tools))
	}
}

// TestReloadProfileServersReachBridge: a bridge of a whole profile serves
// the servers a reload adds to the profile, without a restart, and leaves
// out those it drops; its host is told its tools changed each time, can
// call the new server's tools, and the operator reads what changed.
func TestReloadProfileServersReachBridge(t *testing.T) {
	skipShort(t)
	d := startProfileDaemon(t)
	changed := make(chan struct{}, 16)
	cmd := bridgeCommand(d, "--profile", "safe")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	host := connectHost(t, cmd, "safe-host", true, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	has := func(names []string, tool string) bool { // prefixed or not
		return slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, tool) })
	}
	hasStats := func(names []string) bool { return has(names, "stats") }
	if names := hostToolNames(t, host); hasStats(names) || !has(names, "echo") {
		t.Fatalf("safe before the reload lists %v; want a's echo and no stats", names)
	}
	reloadSafe := func(servers map[string]any) {
		t.Helper()
		profiles := maps.Clone(profileConfig)
		profiles["safe"] = servers
		for len(changed) > 0 {
			<-changed
		}
		writeAndReload(t, d, map[string]any{"mcpServers": map[string]any{"a": fakeServer("legacy"), "b": fakeServer("modern")}, "profiles": profiles})
		select {
		case <-changed:
		case <-ctxT(t).Done():
			t.Fatal("no tools/list_changed after the reload")
		}
	}

	safeA := profileConfig["safe"].(map[string]any)["a"]
	reloadSafe(map[string]any{"a": safeA, "b": map[string]any{"tools": map[string]any{"allow": []string{"stats"}}}})
	var stats string
	poll(t, "b's stats in the bridge's list", func() (bool, error) {
		names := hostToolNames(t, host)
		if i := slices.IndexFunc(names, func(n string) bool { return strings.HasSuffix(n, "stats") }); i >= 0 {
			stats = names[i]
		}
		return stats != "" && has(names, "echo"), nil
	})
	if res, err := host.CallTool(ctxT(t), &mcp.CallToolParams{Name: stats, Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("calling %s, a tool of the server the profile gained: %v %+v", stats, err, res)
	}
	poll(t, "the bridge telling the operator of b", func() (bool, error) { // stderr is copied by a goroutine of exec's
		return strings.Contains(stderr.String(), `now also serves ["b"]`), nil
	})

	reloadSafe(map[string]any{"b": map[string]any{"tools": map[string]any{"allow": []string{"stats"}}}})
	poll(t, "a's tools out of the bridge's list", func() (bool, error) {
		names := hostToolNames(t, host)
		return hasStats(names) && !has(names, "echo"), nil
	})
	poll(t, "the bridge telling the operator of a leaving", func() (bool, error) {
		return strings.Contains(stderr.String(), `no longer serves ["a"]`), nil
	})
}
