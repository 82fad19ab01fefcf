package bridge

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// changingMCPD is fakeMCPD whose alpha lists the tools set last, each list
// in bytes of its own, as mcpd's cache gives a list again after a server's
// list changed.
type changingMCPD struct {
	*fakeMCPD
	mu    sync.Mutex // guards alpha
	alpha string
}

func (f *changingMCPD) setAlpha(tools string) {
	f.mu.Lock()
	f.alpha = tools
	f.mu.Unlock()
}

func (f *changingMCPD) List(ctx context.Context, server, method string, o service.Options) ([]service.ServerList, error) {
	f.mu.Lock()
	alpha := f.alpha
	f.mu.Unlock()
	if server != "alpha" || method != "tools/list" || alpha == "" {
		return f.fakeMCPD.List(ctx, server, method, o)
	}
	return []service.ServerList{{Server: server, Items: json.RawMessage(alpha)}}, nil
}

// A list made of the same items as the last is the last (listmemo.go);
// once a server lists other items, the list, its result and the routes
// of its calls follow them, and so they do when it lists its first items
// again.
func TestListMemoFollowsTheItems(t *testing.T) {
	f := &changingMCPD{fakeMCPD: newFakeMCPD()}
	h, srv := serveHTTPTest(t, f)
	url := srv.URL + "/mcp"
	list := func() string {
		t.Helper()
		status, _, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+modernMeta+`}}`, modernHeaders("tools/list", "")...)
		if status != 200 {
			t.Fatalf("tools/list: %d %s", status, body)
		}
		return body
	}
	call := func(tool string) string {
		t.Helper()
		_, _, body := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tool+`","arguments":{"x":1},`+modernMeta+`}}`,
			modernHeaders("tools/call", tool)...)
		return body
	}
	bridgeOf := func() *bridge {
		t.Helper()
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.shared) != 1 {
			t.Fatalf("%d shared bridges, want 1", len(h.shared))
		}
		for _, sb := range h.shared {
			return sb.b
		}
		return nil
	}
	memo := func() (*listing, json.RawMessage) {
		t.Helper()
		b := bridgeOf()
		b.mu.Lock()
		defer b.mu.Unlock()
		m := b.lists["tools/list"]
		if m == nil || m.result == nil {
			t.Fatal("no tools/list kept")
		}
		return m.l, m.result
	}
	routes := func() map[string]bool {
		b := bridgeOf()
		b.mu.Lock()
		defer b.mu.Unlock()
		names := map[string]bool{}
		for k := range b.routes {
			if name, ok := strings.CutPrefix(k, "tools\x00"); ok {
				names[name] = true
			}
		}
		return names
	}

	first := list()
	if !strings.Contains(first, `"alpha__echo"`) || !strings.Contains(first, `"beta__where"`) {
		t.Fatalf("first list: %s", first)
	}
	l1, res1 := memo()
	if again := list(); again != first {
		t.Fatalf("the same items listed again:\n%s\nwant\n%s", again, first)
	}
	if l2, res2 := memo(); l2 != l1 || &res2[0] != &res1[0] {
		t.Error("the same items were named or written again")
	}

	f.setAlpha(`[{"name":"shout","inputSchema":{"type":"object"}}]`)
	changed := list()
	if !strings.Contains(changed, `"alpha__shout"`) || strings.Contains(changed, `"alpha__echo"`) || !strings.Contains(changed, `"beta__where"`) {
		t.Fatalf("list after alpha's tools changed: %s", changed)
	}
	if l3, _ := memo(); l3 == l1 {
		t.Error("a list of other items was not made again")
	}
	if body := call("alpha__shout"); !strings.Contains(body, `"result"`) || !strings.Contains(body, `x`) {
		t.Errorf("the new tool's call: %s", body)
	}
	if routed := routes(); !routed["alpha__shout"] || routed["alpha__echo"] {
		t.Errorf("routes after alpha's tools changed: %v", routed)
	}

	f.setAlpha(fakeTools["alpha"]) // the first items, in other bytes
	if back := list(); back != first {
		t.Fatalf("the first items listed again:\n%s\nwant\n%s", back, first)
	}
	if routed := routes(); routed["alpha__shout"] || !routed["alpha__echo"] {
		t.Errorf("routes once alpha lists its first tools again: %v", routed)
	}
}
