package main

import (
	"strings"
	"testing"
)

// server/discover is a modern request: its _meta must carry the protocol
// version and the client's capabilities (the client's identity is
// optional, but an object when present); a malformed envelope is -32602
// naming the field.
func TestBridgeDiscoverRequiresEnvelope(t *testing.T) {
	_, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	const (
		version = `"io.modelcontextprotocol/protocolVersion":"2026-07-28"`
		caps    = `"io.modelcontextprotocol/clientCapabilities":{}`
		info    = `"io.modelcontextprotocol/clientInfo":{"name":"host","version":"1"}`
	)
	tests := []struct {
		name, params, field string
	}{
		{"no params", ``, "protocolVersion"},
		{"empty _meta", `"_meta":{}`, "protocolVersion"},
		{"no capabilities", `"_meta":{` + version + `,` + info + `}`, "clientCapabilities"},
		{"no version", `"_meta":{` + caps + `,` + info + `}`, "protocolVersion"},
		{"version not a string", `"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,` + caps + `}`, "protocolVersion"},
		{"capabilities not an object", `"_meta":{` + version + `,"io.modelcontextprotocol/clientCapabilities":true}`, "clientCapabilities"},
		{"clientInfo not an Implementation", `"_meta":{` + version + `,` + caps + `,"io.modelcontextprotocol/clientInfo":"host"}`, "clientInfo"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := itoa(i + 1)
			h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"server/discover","params":{` + tt.params + `}}`)
			m := h.response(id)
			e := responseError(t, m)
			if e == nil || e.Code != codeInvalidParams || !strings.Contains(e.Message, "io.modelcontextprotocol/"+tt.field) {
				t.Errorf("discover with %s answered %s %s, want error %d naming %s", tt.params, brief(m["result"]), m["error"], codeInvalidParams, tt.field)
			}
		})
	}
	for i, meta := range []string{version + `,` + caps, version + `,` + caps + `,` + info} {
		id := itoa(100 + i)
		h.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"server/discover","params":{"_meta":{` + meta + `}}}`)
		if m := h.response(id); m["error"] != nil || m["result"] == nil {
			t.Errorf("discover with %s answered %s, want a DiscoverResult", meta, m["error"])
		}
	}
}

// The methods the modern era removed get -32601 from a modern host, which
// names the replacement, and are still served to a legacy client.
func TestBridgeRemovedMethodsModern(t *testing.T) {
	_, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	modern := hostEras[0]
	removed := map[string]string{
		"initialize":            `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}`,
		"ping":                  ``,
		"logging/setLevel":      `"level":"info"`,
		"resources/subscribe":   `"uri":"r://x"`,
		"resources/unsubscribe": `"uri":"r://x"`,
		"tasks/list":            ``,
		"tasks/result":          `"taskId":"t1"`,
	}
	n := 0
	for method, params := range removed {
		n++
		m := h.request(modern, itoa(n), method, params)
		if e := responseError(t, m); e == nil || e.Code != codeMethodNotFound || !strings.Contains(e.Message, "2026-07-28") {
			t.Errorf("modern %s answered %s %s, want error %d saying it was removed", method, brief(m["result"]), m["error"], codeMethodNotFound)
		}
	}
	// The same bridge still serves a legacy client.
	legacy := hostEras[1]
	legacy.open(h)
	for _, method := range []string{"ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe"} {
		n++
		if m := h.request(legacy, itoa(n), method, removed[method]); m["error"] != nil {
			t.Errorf("legacy %s answered %s, want it served", method, m["error"])
		}
	}
}
