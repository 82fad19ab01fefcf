package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
)

// legacyDeclared is what mcpd declares to a legacy server by default
// (supervisor.declaredCapabilities): a direct list made with it is the one
// mcpd's session gets.
const legacyDeclared = `{"roots":{"listChanged":true},"sampling":{},"elicitation":{"form":{},"url":{}},` +
	`"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`

// coldServer is one lazy server of the cold-start test: its config entry
// and the names of the tools it lists directly.
type coldServer struct {
	entry map[string]any
	tools []string
	late  bool // starts after the first list's bound
}

// directToolNames lists the tools of the server entry e runs, talking to
// it directly on stdio as mcpd does (declaring what mcpd declares).
func directToolNames(t *testing.T, what string, e map[string]any) []string {
	t.Helper()
	cmd := exec.Command(e["command"].(string), e["args"].([]string)...)
	cmd.Env = os.Environ()
	env, _ := e["env"].(map[string]string)
	for k, v := range env {
		if k != fakemcp.EnvStartDelay {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	send := stdioPeer(t, cmd, what, legacyDeclared)
	var tools []struct{ Name string }
	if err := json.Unmarshal([]byte(listItems(t, send("tools/list", ""), "tools")), &tools); err != nil || len(tools) == 0 {
		t.Fatalf("%s lists no tools (%v)", what, err)
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name)
	}
	return out
}

// coldServers are the 15 servers of the cold-start test: the npm
// reference servers and basic-server-vanillajs, and fakes of both eras
// that take from nothing to 6 s to start, all within the first list's
// bound, and "late", which takes lateDelay (beyond the bound when late).
func coldServers(t *testing.T, dir string, lateDelay time.Duration, late bool) map[string]*coldServer {
	t.Helper()
	everything := everythingServer(t)
	fsNode, fsJS := npmJS(t, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	memNode, memJS := npmJS(t, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	servers := map[string]*coldServer{
		"everything": {entry: everything},
		"filesystem": {entry: map[string]any{"command": fsNode, "args": []string{fsJS, dir}}},
		"memory": {entry: map[string]any{"command": memNode, "args": []string{memJS},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(dir, "memory.jsonl")}}},
		"vanilla": {entry: vanillaServer(t)},
	}
	delays := []time.Duration{0, 0, 300 * time.Millisecond, time.Second, 2 * time.Second, 3 * time.Second,
		4 * time.Second, 5 * time.Second, 5 * time.Second, 6 * time.Second, lateDelay}
	for i, delay := range delays {
		mode, name := "legacy", fmt.Sprintf("f%d", i)
		if i%3 == 1 {
			mode = "dual" // mcpd speaks 2026-07-28 to it
		}
		if i == len(delays)-1 {
			name = "late"
		}
		e := fakeServer(mode)
		e["env"].(map[string]string)[fakemcp.EnvStartDelay] = strconv.Itoa(int(delay / time.Millisecond))
		servers[name] = &coldServer{entry: e, late: late && name == "late"}
	}
	for name, s := range servers {
		s.tools = directToolNames(t, name, s.entry)
	}
	return servers
}

// A host connecting to /mcp as soon as mcpd is up, its 15 servers all
// lazy: its first tools list holds every tool of every server that starts
// within the first list's bound (10 s from its initialize), as each lists
// them directly, and not the one slower than that; that one comes in
// later with one tools/list_changed, not one per server, and nothing
// more is told once it is in. When every server starts within the bound,
// the host is told nothing after its whole first list.
func TestAggregateColdStartFifteenServers(t *testing.T) {
	t.Run("one beyond the bound", func(t *testing.T) { coldStart(t, 14*time.Second, true, 2) })
	t.Run("all within the bound", func(t *testing.T) { coldStart(t, 3*time.Second, false, 0) })
}

// coldStart runs the cold start of coldServers, the host told of at most
// maxChanges tools/list_changed in all.
func coldStart(t *testing.T, lateDelay time.Duration, late bool, maxChanges int) {
	bridgeBins(t)
	dir := tempdir.Short(t)
	servers := coldServers(t, dir, lateDelay, late)
	entries := map[string]map[string]any{}
	for name, s := range servers {
		entries[name] = s.entry
	}
	_, base := startHTTPDaemon(t, entries)

	changed := make(chan struct{}, 64)
	opts := answering("cold")
	opts.ToolListChangedHandler = func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }
	client := mcp.NewClient(&mcp.Implementation{Name: "cold", Version: "1.0.0"}, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 3*waitTimeout)
	defer cancel()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to /mcp: %v", err)
	}
	defer cs.Close()

	listed := listAllTools(ctx, t, cs)
	for name, s := range servers {
		for _, tool := range s.tools {
			if got := listed[name+"__"+tool]; got == s.late {
				t.Errorf("first tools list: %s__%s listed %v (server %s starts late: %v)", name, tool, got, name, s.late)
			}
		}
	}
	if want := wantToolCount(servers, false); len(listed) != want {
		t.Errorf("first tools list has %d tools, want %d: %v", len(listed), want, slices.Sorted(maps.Keys(listed)))
	}

	// The late server comes in with a list_changed; the host lists again.
	changes := 0
	for !listed["late__"+servers["late"].tools[0]] {
		if changes >= maxChanges {
			t.Fatalf("%d tools/list_changed and the late server is not listed yet: %v", changes, slices.Sorted(maps.Keys(listed)))
		}
		select {
		case <-changed:
			changes++
		case <-ctx.Done():
			t.Fatalf("no tools/list_changed for the late server: %v", ctx.Err())
		}
		listed = listAllTools(ctx, t, cs)
	}
	if want := wantToolCount(servers, true); len(listed) != want {
		t.Errorf("tools list after the late server came has %d tools, want %d", len(listed), want)
	}
	// Nothing more is told for a while once every server is in.
	quiet := time.NewTimer(3 * time.Second)
	defer quiet.Stop()
	for done := false; !done; {
		select {
		case <-changed:
			changes++
		case <-quiet.C:
			done = true
		}
	}
	t.Logf("first list: %d tools; %d tools/list_changed in all", wantToolCount(servers, false), changes)
	if changes > maxChanges {
		t.Errorf("the host was told of %d tools/list_changed, want %d at most", changes, maxChanges)
	}
}

// listAllTools is every tool the host is listed, every page, by name.
func listAllTools(ctx context.Context, t *testing.T, cs *mcp.ClientSession) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out[tool.Name] = true
	}
	return out
}

// wantToolCount is how many tools the servers list, the late one's with
// late.
func wantToolCount(servers map[string]*coldServer, late bool) int {
	n := 0
	for _, s := range servers {
		if late || !s.late {
			n += len(s.tools)
		}
	}
	return n
}
