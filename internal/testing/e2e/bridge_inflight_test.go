package e2e

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// A host on the stdio bridge (the relay, and the gRPC bridge) that reuses
// the id of a request still in flight gets -32600 for the second; the
// first goes on untouched, its progress and result included. A second
// initialize is refused alike and changes nothing: the host keeps the
// name it initialized with, and the session serves on.
func TestBridgeRefusesIDInFlight(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"f": fakeServer("legacy")})
	for _, tt := range []struct{ name, relay string }{{"relay", ""}, {"grpc", "0"}} {
		t.Run(tt.name, func(t *testing.T) {
			cmd := bridgeCommand(d, "f")
			if tt.relay != "" {
				cmd.Env = append(cmd.Env, "MCPD_BRIDGE_RELAY="+tt.relay)
			}
			in, out := pipeBridge(t, cmd)
			h := &rawHost{in: in, out: bufio.NewReader(out)}
			host := "first-" + tt.name
			h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"`+host+`","version":"1"}}}`)
			if m := h.reply(t, "1"); m.Error != nil {
				t.Fatalf("initialize: %v", m.Error)
			}
			h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

			h.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"progress","arguments":{"count":3,"hold":true},"_meta":{"progressToken":"p7"}}}`)
			if p := h.progress(t, "p7"); p != 1 {
				t.Fatalf("first progress %v, want 1", p)
			}
			// The first holds until release: both below come while it runs.
			h.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"again"}}}`)
			m := h.reply(t, "7")
			if m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(m.Error.Message, "request id 7 is already in flight") {
				t.Fatalf("a second id 7: %s %v, want error %d saying id 7 is in flight", m.Result, m.Error, jsonrpc.CodeInvalidRequest)
			}
			h.send(t, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{"roots":{}},"clientInfo":{"name":"second","version":"2"}}}`)
			if m := h.reply(t, "2"); m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("a second initialize: %s %v, want error %d", m.Result, m.Error, jsonrpc.CodeInvalidRequest)
			}

			h.send(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"release"}}`)
			var progress []float64
			var first *jsonrpc.Message
			for first == nil {
				m := h.next(t)
				switch {
				case m.Method == "notifications/progress":
					progress = append(progress, progressOf(t, m, "p7"))
				case string(m.ID) == "7":
					first = m
				}
			}
			if first.Error != nil || !strings.Contains(string(first.Result), `"done"`) {
				t.Errorf("the first id 7: %s %v, want its result \"done\"", first.Result, first.Error)
			}
			if len(progress) != 2 || progress[0] != 2 || progress[1] != 3 {
				t.Errorf("progress after release %v, want [2 3]", progress)
			}

			h.send(t, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":{"message":"still"}}}`)
			if m := h.reply(t, "9"); m.Error != nil || !strings.Contains(string(m.Result), "still") {
				t.Fatalf("a call after the refusals: %s %v", m.Result, m.Error)
			}
			var names []string
			for _, apps := range appsByTransport(t, d) {
				names = append(names, apps...)
			}
			if got := strings.Join(names, ", "); !strings.Contains(got, host+" (mcpdctl bridge)") || strings.Contains(got, "second") {
				t.Errorf("apps %s: want the host named by its first initialize", got)
			}
		})
	}
}

// next reads the bridge's next message.
func (h *rawHost) next(t *testing.T) *jsonrpc.Message {
	t.Helper()
	line, err := h.out.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read from the bridge: %v", err)
	}
	var m jsonrpc.Message
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("bridge wrote %q: %v", line, err)
	}
	return &m
}

// progress reads until the next progress notification, and returns its
// progress, which must be for token.
func (h *rawHost) progress(t *testing.T, token string) float64 {
	t.Helper()
	for {
		if m := h.next(t); m.Method == "notifications/progress" {
			return progressOf(t, m, token)
		}
	}
}

// progressOf is the progress of notification m, which must be for token.
func progressOf(t *testing.T, m *jsonrpc.Message, token string) float64 {
	t.Helper()
	var p struct {
		Token    string  `json:"progressToken"`
		Progress float64 `json:"progress"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil || p.Token != token {
		t.Fatalf("progress %s, want one for %s", m.Params, token)
	}
	return p.Progress
}
