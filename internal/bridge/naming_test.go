package bridge

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// toolLists are ListTools entries of servers with the named tools.
func toolLists(byServer map[string][]string) []service.ServerList {
	var out []service.ServerList
	for _, s := range slices.Sorted(func(yield func(string) bool) {
		for k := range byServer {
			if !yield(k) {
				return
			}
		}
	}) {
		var items []map[string]string
		for _, n := range byServer[s] {
			items = append(items, map[string]string{"name": n})
		}
		data, _ := json.Marshal(items)
		out = append(out, service.ServerList{Server: s, Items: data})
	}
	return out
}

func exposedNames(t *testing.T, tools []json.RawMessage) []string {
	t.Helper()
	var names []string
	for _, raw := range tools {
		var it struct {
			Name string `json:"name"`
		}
		if err := json.Unmarshal(raw, &it); err != nil {
			t.Fatal(err)
		}
		names = append(names, it.Name)
	}
	slices.Sort(names)
	return names
}

func TestNamingModes(t *testing.T) {
	lists := toolLists(map[string][]string{"a": {"echo", "read"}, "b": {"echo", "write"}})
	cases := []struct {
		mode profile.Prefix
		aggr bool
		want []string
	}{
		{profile.PrefixAlways, true, []string{"a__echo", "a__read", "b__echo", "b__write"}},
		{profile.PrefixOnCollision, true, []string{"a__echo", "b__echo", "read", "write"}},
	}
	for _, c := range cases {
		tools, err := HostTools(lists, c.aggr, c.mode)
		if err != nil {
			t.Fatalf("%s: %v", c.mode, err)
		}
		if got := exposedNames(t, tools); !slices.Equal(got, c.want) {
			t.Errorf("%s: names %v, want %v", c.mode, got, c.want)
		}
	}
	// Without a clash nothing is prefixed.
	tools, err := HostTools(toolLists(map[string][]string{"a": {"read"}, "b": {"write"}}), true, profile.PrefixOnCollision)
	if err != nil || !slices.Equal(exposedNames(t, tools), []string{"read", "write"}) {
		t.Errorf("no clash: %v, %v", exposedNames(t, tools), err)
	}
	// One server: names as it gives them, whatever the mode.
	tools, _ = HostTools(toolLists(map[string][]string{"a": {"echo"}}), false, profile.PrefixAlways)
	if got := exposedNames(t, tools); !slices.Equal(got, []string{"echo"}) {
		t.Errorf("one server: %v", got)
	}
}

func TestOnCollisionRoutesAndClash(t *testing.T) {
	l, err := nameItems("tools/list", []serverItems{
		{server: "a", items: json.RawMessage(`[{"name":"echo"},{"name":"only_a"}]`)},
		{server: "b", items: json.RawMessage(`[{"name":"echo"}]`)},
	}, true, profile.PrefixOnCollision, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := l.routes["only_a"]; r != (route{server: "a", name: "only_a"}) {
		t.Errorf("only_a routes to %+v", r)
	}
	if r := l.routes["b__echo"]; r != (route{server: "b", name: "echo"}) {
		t.Errorf("b__echo routes to %+v", r)
	}
	// A bare name that is another server's prefixed one is a clash, not a shadow.
	_, err = nameItems("tools/list", []serverItems{
		{server: "a", items: json.RawMessage(`[{"name":"b__echo"}]`)},
		{server: "b", items: json.RawMessage(`[{"name":"echo"}]`)},
		{server: "c", items: json.RawMessage(`[{"name":"echo"}]`)},
	}, true, profile.PrefixOnCollision, nil, false)
	if err == nil || !strings.Contains(err.Message, `"b__echo"`) || !strings.Contains(err.Message, "clashes") {
		t.Errorf("clash error = %v", err)
	}
	// Once the bridge is up (lenient), the later of two clashing items is
	// left out with a warning; the rest of the list stands.
	l, err = nameItems("tools/list", []serverItems{
		{server: "a", items: json.RawMessage(`[{"name":"b__echo"},{"name":"only_a"}]`)},
		{server: "b", items: json.RawMessage(`[{"name":"echo"}]`)},
		{server: "c", items: json.RawMessage(`[{"name":"echo"}]`)},
	}, true, profile.PrefixOnCollision, nil, true)
	if err != nil || len(l.clashes) != 1 || !strings.Contains(l.clashes[0], "left out") {
		t.Fatalf("lenient clash: %v, warnings %q", err, l.clashes)
	}
	if r := l.routes["b__echo"]; r.server != "a" || l.routes["only_a"].server != "a" || l.routes["c__echo"].server != "c" {
		t.Errorf("lenient clash routes %+v, want a's b__echo and only_a, and c__echo", l.routes)
	}
	// A server left out of the list (too slow) keeps a name it shares
	// prefixed for the others.
	l, err = nameItems("tools/list", []serverItems{{server: "a", items: json.RawMessage(`[{"name":"echo"}]`)}},
		true, profile.PrefixOnCollision, []serverItems{{server: "b", items: json.RawMessage(`[{"name":"echo"}]`)}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if r := l.routes["a__echo"]; r != (route{server: "a", name: "echo"}) || len(l.routes) != 1 {
		t.Errorf("with b left out, routes %+v, want a__echo only", l.routes)
	}
}

func TestEndpointOf(t *testing.T) {
	for path, want := range map[string]endpoint{
		"/mcp": {}, "/servers/x/mcp": {server: "x"}, "/profiles/p/mcp": {profile: "p"},
	} {
		if got, ok := endpointOf(path); !ok || got != want {
			t.Errorf("endpointOf(%q) = %+v, %v", path, got, ok)
		}
	}
	for _, bad := range []string{"/profiles//mcp", "/profiles/p/x/mcp", "/profiles/p", "/other"} {
		if _, ok := endpointOf(bad); ok {
			t.Errorf("endpointOf(%q) ok", bad)
		}
	}
}
