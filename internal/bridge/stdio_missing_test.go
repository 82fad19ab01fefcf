package bridge_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
)

// crashLoop drives server into its crash loop (it crashes on start while
// the file its spec names exists) with a subscription, which is demand.
func crashLoop(t *testing.T, sock, server string) {
	t.Helper()
	be := dialMcpd(t, sock)
	defer be.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	looping := false
	err := be.Watch(ctx, service.Watch{Servers: []string{server}, ToolsListChanged: true, State: true}, func(ev service.SubscriptionEvent) error {
		if ev.State == "crashloop" {
			looping = true
			return errors.New("seen") // ends the subscription
		}
		return nil
	})
	if !looping {
		t.Fatalf("no crash loop of %s: %v", server, err)
	}
}

// An aggregate whose server is crash-looping serves the others and warns
// the host which server is missing; when that server is started, the host
// is told its lists changed and its tools are listed.
func TestBridgeAggregateServesWhileServerDown(t *testing.T) {
	for _, era := range hostEras {
		t.Run(era.name, func(t *testing.T) {
			broken := filepath.Join(t.TempDir(), "broken")
			if err := os.WriteFile(broken, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			b := mcpdtest.FakeSpec("b", "modern")
			b.Env[fakemcp.EnvCrashWhile] = broken
			sock := mcpdtest.StartSpecs(t, []supervisor.Spec{mcpdtest.FakeSpec("a", "legacy"), b})
			crashLoop(t, sock, "b")

			h := startBridgeOf(t, sock, "a", "b")
			era.open(h)
			warnedOf := func(m map[string]json.RawMessage) bool {
				return string(m["method"]) == `"notifications/message"` &&
					strings.Contains(string(m["params"]), `"warning"`) && strings.Contains(string(m["params"]), `\"b\"`)
			}
			listen := `"L"`
			if era.meta != "" {
				h.Send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + era.meta +
					`,"notifications":{"toolsListChanged":true,"promptsListChanged":true}}}`)
				h.Next("the listen's acknowledgement", func(m map[string]json.RawMessage) bool {
					return string(m["method"]) == `"notifications/subscriptions/acknowledged"`
				})
				// A modern host gets log messages for its requests that
				// ask for them.
				h.Send(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
					`"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},` +
					`"io.modelcontextprotocol/logLevel":"warning"}}}`)
				h.Next("a warning naming b", warnedOf)
				h.Response("1")
			} else {
				h.Next("a warning naming b", warnedOf)
			}
			if tools := toolNames(t, h, era, "2"); !tools["a__echo"] || tools["b__echo"] {
				t.Errorf("tools while b is down = %v, want a's only", tools)
			}

			if err := os.Remove(broken); err != nil {
				t.Fatal(err)
			}
			startServer(t, sock, "b")
			h.Next("tools/list_changed", func(m map[string]json.RawMessage) bool {
				return string(m["method"]) == `"notifications/tools/list_changed"` &&
					(era.meta == "" || strings.Contains(string(m["params"]), listen))
			})
			if tools := toolNames(t, h, era, "3"); !tools["a__echo"] || !tools["b__echo"] {
				t.Errorf("tools once b runs = %v, want a's and b's", tools)
			}
			if m := h.request(era, "4", "tools/call", `"name":"b__echo","arguments":{"message":"hi"}`); m["error"] != nil {
				t.Errorf("b__echo answered %s", m["error"])
			}
		})
	}
}

// toolNames lists the bridge's tools.
func toolNames(t *testing.T, h *bridgeHost, era hostEra, id string) map[string]bool {
	t.Helper()
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(h.mustRequest(era, id, "tools/list", ""), &res); err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, tl := range res.Tools {
		out[tl.Name] = true
	}
	return out
}

// A bridge of one server that is down starts all the same: requests get an
// error saying why the server cannot serve; once it is started, the host is
// told its lists changed and is served.
func TestBridgeSingleServerDown(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken")
	if err := os.WriteFile(broken, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b := mcpdtest.FakeSpec("b", "legacy")
	b.Env[fakemcp.EnvCrashWhile] = broken
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{b})
	crashLoop(t, sock, "b")

	h := startBridgeOf(t, sock, "b")
	legacy := hostEras[1]
	legacy.open(h)
	m := h.request(legacy, "1", "tools/list", "")
	if e := responseError(t, m); e == nil || !strings.Contains(e.Message, `"b"`) || !strings.Contains(e.Message, "crash-looping") {
		t.Errorf("tools/list while b is down answered %s %s, want an error saying b is crash-looping", brief(m["result"]), m["error"])
	}
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	startServer(t, sock, "b")
	h.Next("tools/list_changed", func(m map[string]json.RawMessage) bool {
		return string(m["method"]) == `"notifications/tools/list_changed"`
	})
	if tools := toolNames(t, h, legacy, "2"); !tools["echo"] {
		t.Errorf("tools once b runs = %v, want b's", tools)
	}
}
