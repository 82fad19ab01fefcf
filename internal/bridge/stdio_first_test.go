package bridge_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
)

// firstListBound is the bridge's firstListWait.
const firstListBound = 10 * time.Second

// slowSpec is a lazy legacy fake server "name" that takes delay to start.
func slowSpec(name string, delay time.Duration) supervisor.Spec {
	s := mcpdtest.FakeSpec(name, "legacy")
	s.Protocol = session.ProtocolLegacy
	s.Env[fakemcp.EnvStartDelay] = itoa(int(delay / time.Millisecond))
	return s
}

// A host of an aggregate of lazy servers, some slow to start, connecting
// at once: its first tools list holds every server that starts within the
// first list's bound (10 s from the bridge's start), it is then told of
// a change once (not once per server), and a server slower than the bound
// arrives with one list_changed.
func TestBridgeAggregateFirstListWhole(t *testing.T) {
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{
		slowSpec("a", 0), slowSpec("b", 2*time.Second), slowSpec("c", 6*time.Second),
		slowSpec("d", 7*time.Second), slowSpec("late", 13*time.Second),
	})
	began := time.Now()
	h := startBridgeOf(t, sock, "a", "b", "c", "d", "late")
	legacy := hostEras[1]
	legacy.open(h)
	tools := toolNames(t, h, legacy, "1")
	for _, want := range []string{"a__echo", "b__echo", "c__echo", "d__echo"} {
		if !tools[want] {
			t.Errorf("first tools list (after %v) lacks %s: %v", time.Since(began).Round(time.Millisecond), want, tools)
		}
	}
	if tools["late__echo"] {
		t.Errorf("first tools list has the server that starts after the bound: %v", tools)
	}
	// Generous: the bound, with room for a loaded machine.
	if took := time.Since(began); took > firstListBound+5*time.Second {
		t.Errorf("first tools list came after %v, want within about %v", took, firstListBound)
	}

	// Count every tools/list_changed, including those that come while a
	// list is answered.
	changes := 0
	list := func(id string) map[string]bool {
		h.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list"}`)
		m := h.NextWithin("response "+id, 20*time.Second, func(m map[string]json.RawMessage) bool {
			if isToolsListChanged(m) {
				changes++
			}
			return string(m["id"]) == id
		})
		return listedNames(t, m["result"])
	}
	for id := 2; !tools["late__echo"]; id++ {
		if id > 5 {
			t.Fatalf("no tools list with late__echo after %d list_changed: %v", changes, tools)
		}
		seen := changes
		h.NextWithin("tools/list_changed", 20*time.Second, func(m map[string]json.RawMessage) bool {
			if isToolsListChanged(m) {
				changes++
			}
			return changes > seen
		})
		tools = list(itoa(id))
	}
	if took := time.Since(began); took < firstListBound {
		t.Errorf("late server listed after %v, before it could have started", took)
	}
	if changes > 2 {
		t.Errorf("%d tools/list_changed until the late server arrived, want one (two at most)", changes)
	}
	// Nothing more is told once every server is listed.
	quiet := time.NewTimer(2 * time.Second)
	defer quiet.Stop()
	for {
		select {
		case m := <-h.Lines:
			if isToolsListChanged(m) {
				t.Errorf("tools/list_changed after every server was listed: %s", mustJSON(m))
			}
		case <-quiet.C:
			return
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
