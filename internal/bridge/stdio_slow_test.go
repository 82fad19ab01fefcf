package bridge_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// An aggregate whose server lists slower than the bridge waits for one
// server gives that server's last list without calling it missing: its
// tools still route, the list is announced as changed when the slow
// answer comes, and the host's next list has the new one.
func TestBridgeAggregateSlowListLeftOut(t *testing.T) {
	for _, era := range hostEras {
		t.Run(era.name, func(t *testing.T) {
			slow := filepath.Join(t.TempDir(), "slow")
			b := mcpdtest.FakeSpec("b", "legacy")
			b.Env[fakemcp.EnvListDelay] = "6500"
			b.Env[fakemcp.EnvListDelayWhile] = slow
			sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("a", "legacy"), b})

			h := startBridgeOf(t, sock, "a", "b")
			era.open(h)
			if era.meta != "" { // a modern host hears of list changes on a listen
				h.Send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + era.meta +
					`,"notifications":{"toolsListChanged":true}}}`)
				h.Next("the listen's acknowledgement", func(m map[string]json.RawMessage) bool {
					return string(m["method"]) == `"notifications/subscriptions/acknowledged"`
				})
			}
			if tools := toolNames(t, h, era, "1"); !tools["a__echo"] || !tools["b__echo"] {
				t.Fatalf("tools = %v, want a's and b's", tools)
			}
			// b's list changes (the host is told before the call's
			// answer), and its next list is slow.
			if err := os.WriteFile(slow, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if m := h.request(era, "2", "tools/call", `"name":"b__addtool","arguments":{"name":"late"}`); m["error"] != nil {
				t.Fatalf("b__addtool answered %s", m["error"])
			}

			levels := ""
			if era.meta != "" {
				levels = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
					`"io.modelcontextprotocol/logLevel":"warning"}`
			}
			h.Send(`{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{` + levels + `}}`)
			warned := h.Next("a warning that b was slow", func(m map[string]json.RawMessage) bool {
				return string(m["method"]) == `"notifications/message"` &&
					strings.Contains(string(m["params"]), `server \"b\" did not answer tools/list within 5s`)
			})
			if strings.Contains(string(warned["params"]), "missing") {
				t.Errorf("a slow server was called missing: %s", warned["params"])
			}
			res := h.Response("3")
			if names := listedNames(t, res["result"]); !names["a__echo"] || !names["b__echo"] || names["b__late"] {
				t.Errorf("tools while b is slow = %v, want a's and b's last (without b__late)", names)
			}
			if m := h.request(era, "4", "tools/call", `"name":"b__echo","arguments":{"message":"hi"}`); m["error"] != nil {
				t.Errorf("b__echo while b lists slowly answered %s", m["error"])
			}
			// The list in flight stays slow; the next would not be (the
			// late one is taken, unless b's change reached the bridge
			// while it was in flight).
			if err := os.Remove(slow); err != nil {
				t.Fatal(err)
			}

			h.Next("tools/list_changed once b's list came", isToolsListChanged)
			if tools := toolNames(t, h, era, "5"); !tools["a__echo"] || !tools["b__echo"] || !tools["b__late"] {
				t.Errorf("tools once b's list came = %v, want a's and b's with b__late", tools)
			}
		})
	}
}

func isToolsListChanged(m map[string]json.RawMessage) bool {
	return string(m["method"]) == `"notifications/tools/list_changed"`
}

// listedNames are the names of a tools/list result's tools.
func listedNames(t *testing.T, result json.RawMessage) map[string]bool {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(result, &res); err != nil {
		t.Fatalf("tools/list result %s: %v", result, err)
	}
	out := map[string]bool{}
	for _, tl := range res.Tools {
		out[tl.Name] = true
	}
	return out
}

// A call past the server's requestTimeout tells the host which timeout ran
// out and how long it was, as mcpdctl call does.
func TestBridgeCallTimeoutNamesTheTimeout(t *testing.T) {
	s := mcpdtest.FakeSpec("s", "legacy")
	s.RequestTimeout = 200 * time.Millisecond
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{s})
	for _, era := range hostEras {
		t.Run(era.name, func(t *testing.T) {
			h := startBridgeOf(t, sock, "s")
			era.open(h)
			m := h.request(era, "1", "tools/call", `"name":"sleep","arguments":{"ms":5000}`)
			want := `server \"s\": tools/call: timed out after 200ms (its requestTimeout)`
			if !strings.Contains(string(m["error"]), want) {
				t.Errorf("a call past the requestTimeout answered %s %s, want an error saying %s", m["error"], m["result"], want)
			}
		})
	}
}

// An aggregate of a server stuck in its handshake starts after the start's
// one wait (5 s: the bound below is that rule's, with room for a loaded
// machine, not a measure of speed; waiting for the stream and then again
// for the stuck server's tools took 10 s), and its lists come without
// waiting for that server again.
func TestBridgeAggregateStuckServerHoldsUpLittle(t *testing.T) {
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("a", "legacy"), mcpdtest.FakeSpec("b", "legacy,hanginit")})
	began := time.Now()
	h := startBridgeOf(t, sock, "a", "b")
	h.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	if m := h.NextWithin("initialize's answer", 20*time.Second, func(m map[string]json.RawMessage) bool { return string(m["id"]) == "0" }); m["error"] != nil {
		t.Fatalf("initialize: %s", m["error"])
	}
	if took := time.Since(began); took > 9*time.Second {
		t.Errorf("initialize was answered %v after the bridge started, want the start's one wait (5 s)", took.Round(time.Millisecond))
	}
	h.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	legacy := hostEras[1]
	for _, id := range []string{"1", "2"} { // neither waits for b
		if tools := toolNames(t, h, legacy, id); !tools["a__echo"] || tools["b__echo"] {
			t.Errorf("tools while b is stuck = %v, want a's only", tools)
		}
	}
	if m := h.request(legacy, "3", "tools/call", `"name":"a__echo","arguments":{"message":"hi"}`); m["error"] != nil {
		t.Errorf("a__echo answered %s", m["error"])
	}
}

// A bridge of one server stuck in its handshake answers initialize with the
// default capabilities after its start's wait (8 s, within the 10 s a host
// such as Codex gives a server to start; it took 17 s). The bound is that
// rule's, with room for a loaded machine.
func TestBridgeStuckServerAloneAnswersInitialize(t *testing.T) {
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("b", "legacy,hanginit")})
	began := time.Now()
	h := startBridgeOf(t, sock, "b")
	h.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	m := h.NextWithin("initialize's answer", 20*time.Second, func(m map[string]json.RawMessage) bool { return string(m["id"]) == "0" })
	if m["error"] != nil || !strings.Contains(string(m["result"]), `"tools":{"listChanged":true}`) {
		t.Fatalf("initialize answered %s %s, want the default capabilities", m["error"], m["result"])
	}
	if took := time.Since(began); took > 11*time.Second {
		t.Errorf("initialize was answered %v after the bridge started, want its start's wait (8 s)", took.Round(time.Millisecond))
	}
}

// An aggregate's read of a URI no list had yet goes to the server that
// lists it, not to the first server that answers a read of it.
func TestBridgeAggregateReadBeforeListGoesToTheLister(t *testing.T) {
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("a", "legacy,readall"), mcpdtest.FakeSpec("b", "legacy")})
	h := startBridgeOf(t, sock, "a", "b")
	legacy := hostEras[1]
	legacy.open(h)
	res := h.mustRequest(legacy, "1", "resources/read", `"uri":"fake://hello"`)
	if !strings.Contains(string(res), `"text":"hello"`) {
		t.Errorf("read of b's fake://hello before any list answered %s, want b's contents", res)
	}
}

// An aggregate asks a server for no list its capabilities do not declare.
func TestBridgeAggregateAsksOnlyDeclaredLists(t *testing.T) {
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("a", "legacy,toolsonly"), mcpdtest.FakeSpec("b", "legacy")})
	h := startBridgeOf(t, sock, "a", "b")
	legacy := hostEras[1]
	legacy.open(h)
	for i, method := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		h.mustRequest(legacy, itoa(1+i), method, "")
	}
	var stats struct {
		Methods map[string]int `json:"methods"`
	}
	res := h.mustRequest(legacy, "9", "tools/call", `"name":"a__stats","arguments":{}`)
	var call struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(res, &call); err != nil || len(call.Content) == 0 || json.Unmarshal([]byte(call.Content[0].Text), &stats) != nil {
		t.Fatalf("a__stats: %s", res)
	}
	for _, method := range []string{"prompts/list", "resources/list", "resources/templates/list"} {
		if n := stats.Methods[method]; n != 0 {
			t.Errorf("a, which declares tools only, was sent %s %d times", method, n)
		}
	}
	if stats.Methods["tools/list"] == 0 {
		t.Errorf("a was never sent tools/list: %v", stats.Methods)
	}
}

// Requests piped before stdin closes get whole lists from an aggregate:
// the servers' lists are not cut short with the bridge's life.
func TestBridgeAggregateListsAfterStdinCloses(t *testing.T) {
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("a", "legacy"), mcpdtest.FakeSpec("b", "modern")})
	h := startBridgeOf(t, sock, "a", "b")
	h.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	h.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	h.Send(`{"jsonrpc":"2.0","id":2,"method":"prompts/list"}`)
	h.CloseStdin()
	got := map[string]map[string]json.RawMessage{} // the answers come in any order
	for len(got) < 2 {
		m := h.Next("the lists' answers", func(m map[string]json.RawMessage) bool { return string(m["id"]) == "1" || string(m["id"]) == "2" })
		got[string(m["id"])] = m
	}
	if names := listedNames(t, got["1"]["result"]); !names["a__echo"] || !names["b__echo"] {
		t.Errorf("tools piped before EOF = %v, want a's and b's", names)
	}
	if m := got["2"]; !strings.Contains(string(m["result"]), `"a__`) || !strings.Contains(string(m["result"]), `"b__`) {
		t.Errorf("prompts piped before EOF = %s, want a's and b's", m["result"])
	}
}

// A server that never ran and whose start failed after a list gave up on
// it is not waited for again (nor warned of again) until it is ready.
func TestBridgeAggregateFailedStartNotWaitedFor(t *testing.T) {
	b := mcpdtest.FakeSpec("b", "legacy,hanginit")
	b.Protocol = "legacy"
	b.DiscoverTimeout, b.RequestTimeout = 500*time.Millisecond, 11500*time.Millisecond // each start fails after 12 s
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("a", "legacy"), b})
	h := startBridgeOf(t, sock, "a", "b")
	h.Send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	h.NextWithin("initialize's answer", 20*time.Second, func(m map[string]json.RawMessage) bool { return string(m["id"]) == "0" })
	h.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	// b's first start fails (its list at the bridge's start was given up on).
	deadline := time.Now().Add(20 * time.Second)
	client := mcpdClient(t, sock)
	status := func() string { // the servers' last errors, as mcpdctl status shows them
		st, err := client.GetStatus(t.Context(), &mcpdv1.GetStatusRequest{})
		if err != nil {
			t.Fatalf("status: %v", err)
		}
		var b strings.Builder
		for _, s := range st.GetServers() {
			b.WriteString(s.GetName() + ": " + s.GetLastError() + "\n")
		}
		return b.String()
	}
	for s := status(); !strings.Contains(s, "handshake timed out"); s = status() {
		if time.Now().After(deadline) {
			t.Fatalf("b's start never failed:\n%s", s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	m := h.Next("the list's answer", func(m map[string]json.RawMessage) bool {
		if string(m["method"]) == `"notifications/message"` && strings.Contains(string(m["params"]), "did not answer tools/list") {
			t.Errorf("waited for b again after its failed start: %s", m["params"])
		}
		return string(m["id"]) == "1"
	})
	if names := listedNames(t, m["result"]); !names["a__echo"] || names["b__echo"] {
		t.Errorf("tools = %v, want a's only", names)
	}
}
