package bridge_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
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
			h.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"server/discover","params":{` + tt.params + `}}`)
			m := h.Response(id)
			e := responseError(t, m)
			if e == nil || e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(e.Message, "io.modelcontextprotocol/"+tt.field) {
				t.Errorf("discover with %s answered %s %s, want error %d naming %s", tt.params, brief(m["result"]), m["error"], jsonrpc.CodeInvalidParams, tt.field)
			}
		})
	}
	for i, meta := range []string{version + `,` + caps, version + `,` + caps + `,` + info} {
		id := itoa(100 + i)
		h.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"server/discover","params":{"_meta":{` + meta + `}}}`)
		if m := h.Response(id); m["error"] != nil || m["result"] == nil {
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
		if e := responseError(t, m); e == nil || e.Code != jsonrpc.CodeMethodNotFound || !strings.Contains(e.Message, "2026-07-28") {
			t.Errorf("modern %s answered %s %s, want error %d saying it was removed", method, brief(m["result"]), m["error"], jsonrpc.CodeMethodNotFound)
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

// A modern host's resources/read result carries the required caching hints:
// a legacy server's, which has none, gets ttlMs 0 and cacheScope private; a
// modern server's keeps its own.
func TestBridgeReadCacheHints(t *testing.T) {
	sock := mcpdtest.Start(t, "l", "legacy", "m", "modern")
	for _, tt := range []struct {
		args       []string
		ttl, scope string
	}{
		{[]string{"l"}, "0", `"private"`},
		{[]string{"l", "m"}, "0", `"private"`},
		{[]string{"m"}, itoa(fakemcp.DefaultTTL), ""},
	} {
		t.Run(strings.Join(tt.args, ","), func(t *testing.T) {
			h := startBridgeOf(t, sock, tt.args...)
			modern := hostEras[0]
			modern.open(h)
			var res map[string]json.RawMessage
			raw := h.mustRequest(modern, "1", "resources/read", `"uri":"fake://hello"`)
			if err := json.Unmarshal(raw, &res); err != nil {
				t.Fatal(err)
			}
			if string(res["resultType"]) != `"complete"` || string(res["ttlMs"]) != tt.ttl || res["cacheScope"] == nil ||
				(tt.scope != "" && string(res["cacheScope"]) != tt.scope) || res["contents"] == nil {
				t.Errorf("read = %s, want its contents with resultType complete, ttlMs %s and cacheScope %s", brief(raw), tt.ttl, tt.scope)
			}
		})
	}
}

// A line longer than --max-line-size gets an invalid-request error naming
// the limit, with the request's id when it comes before the cut (else id
// null), and the bridge goes on serving the next lines; a line of exactly
// the limit is served.
func TestBridgeMaxLineSize(t *testing.T) {
	_, sock := startBridgeMcpd(t)
	h := startBridgeWith(t, sock, bridge.Options{Names: []string{"s"}, MaxLine: 1024})
	pad := func(line string, size int) string {
		return strings.Replace(line, "PAD", strings.Repeat("x", size-len(line)+len("PAD")), 1)
	}
	tooLarge := func(m map[string]json.RawMessage) {
		t.Helper()
		e := responseError(t, m)
		if e == nil || e.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(e.Message, "1024 bytes") || !strings.Contains(e.Message, "--max-line-size") {
			t.Errorf("oversize line answered %s %s, want error %d naming the limit", brief(m["result"]), m["error"], jsonrpc.CodeInvalidRequest)
		}
	}
	h.Send(pad(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"x","arguments":{"pad":"PAD"}}}`, 5000))
	tooLarge(h.Response("5"))
	h.Send(pad(`{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x","arguments":{"pad":"PAD"}},"id":6}`, 200_000))
	tooLarge(h.Response("null"))
	h.Send(pad(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{"pad":"PAD"}}`, 1024))
	if m := h.Response("7"); m["error"] != nil || string(m["result"]) != "{}" {
		t.Errorf("a line of exactly the limit answered %s %s, want ping's result", m["result"], m["error"])
	}
	h.Send(pad(`{"jsonrpc":"2.0","id":8,"method":"ping","params":{"pad":"PAD"}}`, 1025))
	tooLarge(h.Response("8"))
}

// A legacy host gets legacy results from a modern server: "Legacy results
// have no resultType, ttlMs or cacheScope", and the serverInfo a modern
// server stamps into each result's _meta is not passed on; the rest of the
// result is.
func TestBridgeLegacyHostGetsLegacyResults(t *testing.T) {
	sock := mcpdtest.Start(t, "m", "modern", "n", "modern")
	for _, args := range [][]string{{"m"}, {"m", "n"}} {
		t.Run(strings.Join(args, ","), func(t *testing.T) {
			h := startBridgeOf(t, sock, args...)
			legacy := hostEras[1]
			legacy.open(h)
			tool := "echo"
			if len(args) > 1 {
				tool = "m__echo"
			}
			for i, req := range []struct{ method, params, want string }{
				{"tools/call", `"name":"` + tool + `","arguments":{"message":"hi"}`, "content"},
				{"resources/read", `"uri":"fake://hello"`, "contents"},
				{"tools/list", ``, "tools"},
			} {
				raw := h.mustRequest(legacy, itoa(i+1), req.method, req.params)
				var res map[string]json.RawMessage
				if err := json.Unmarshal(raw, &res); err != nil {
					t.Fatal(err)
				}
				var meta map[string]json.RawMessage
				_ = json.Unmarshal(res["_meta"], &meta)
				if res[req.want] == nil || res["resultType"] != nil || res["ttlMs"] != nil || res["cacheScope"] != nil || meta[jsonrpc.MetaServerInfo] != nil {
					t.Errorf("%s = %s, want %s without modern members", req.method, brief(raw), req.want)
				}
			}
		})
	}
}

// A line that is not a JSON-RPC 2.0 request, notification or response as
// MCP has them gets -32600 with its id when that is a valid one, else id
// null, and the bridge goes on serving.
func TestBridgeInvalidRequests(t *testing.T) {
	_, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	for i, tt := range []struct{ line, id string }{
		{`{"jsonrpc":"2.0","id":null,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, "null"},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, "null"},
		{`{"id":4,"method":"ping"}`, "4"},
		{`{"jsonrpc":"1.0","id":5,"method":"ping"}`, "5"},
		{`{"jsonrpc":"2.0","id":6,"method":""}`, "6"},
		{`{"jsonrpc":"2.0","id":7,"result":{},"method":"ping"}`, "7"},
		{`{"jsonrpc":"2.0"}`, "null"},
		{`[{"jsonrpc":"2.0","id":8,"method":"ping"}]`, "null"},
	} {
		h.Send(tt.line)
		sentinel := `"s` + itoa(i) + `"`
		h.Send(`{"jsonrpc":"2.0","id":` + sentinel + `,"method":"ping"}`)
		var got []map[string]json.RawMessage
		for {
			m := h.Next("an answer", func(map[string]json.RawMessage) bool { return true })
			if string(m["id"]) == sentinel {
				break
			}
			got = append(got, m)
		}
		if len(got) != 1 || string(got[0]["id"]) != tt.id {
			t.Errorf("%s: answered %v, want one error with id %s", tt.line, got, tt.id)
			continue
		}
		if e := responseError(t, got[0]); e == nil || e.Code != jsonrpc.CodeInvalidRequest {
			t.Errorf("%s: answered %s, want -32600", tt.line, got[0]["error"])
		}
	}
}

// A request whose _meta names a version the bridge does not serve per
// request gets -32022 whose data.supported lists only the versions a
// request's _meta may name, so that a client retrying with one of them
// is served.
func TestBridgePerRequestVersionUnsupported(t *testing.T) {
	_, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	for i, v := range []string{"2025-11-25", "2099-01-01"} {
		id := itoa(i + 1)
		m := h.request(hostEra{"", `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}`}, id, "tools/list", "")
		var e struct {
			Code int64 `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
			} `json:"data"`
		}
		if err := json.Unmarshal(m["error"], &e); err != nil || e.Code != jsonrpc.CodeUnsupportedProtocolVersion ||
			!slices.Equal(e.Data.Supported, jsonrpc.ModernVersions()) {
			t.Errorf("version %s: %s, want -32022 with supported %v", v, m["error"], jsonrpc.ModernVersions())
		}
	}
}

// An initialize without the protocol version it asks for gets -32602; one
// with it is then served.
func TestBridgeInitializeNeedsProtocolVersion(t *testing.T) {
	_, sock := startBridgeMcpd(t)
	h := startBridge(t, sock)
	for i, params := range []string{``, `,"params":{}`, `,"params":{"protocolVersion":7,"capabilities":{}}`} {
		id := itoa(i + 1)
		h.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"initialize"` + params + `}`)
		if e := responseError(t, h.Response(id)); e == nil || e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(e.Message, "protocolVersion") {
			t.Errorf("initialize%s: %v, want -32602 naming protocolVersion", params, e)
		}
	}
	hostEras[1].open(h)
}

// A modern host's every result carries serverInfo in _meta: the child's
// when one server is bridged (a legacy child's results get it too), the
// bridge's own when several are.
func TestBridgeModernResultsCarryServerInfo(t *testing.T) {
	sock := mcpdtest.Start(t, "m", "modern", "l", "legacy")
	for _, tt := range []struct {
		args []string
		name string
	}{{[]string{"l"}, "fakemcp"}, {[]string{"m"}, "fakemcp"}, {[]string{"m", "l"}, bridge.DefaultName}} {
		t.Run(strings.Join(tt.args, ","), func(t *testing.T) {
			h := startBridgeOf(t, sock, tt.args...)
			modern := hostEras[0]
			tool := "echo"
			if len(tt.args) > 1 {
				tool = tt.args[0] + "__echo"
			}
			for i, req := range []struct{ method, params string }{
				{"tools/list", ``},
				{"tools/call", `"name":"` + tool + `","arguments":{"message":"hi"}`},
				{"resources/read", `"uri":"fake://hello"`},
			} {
				raw := h.mustRequest(modern, itoa(i+1), req.method, req.params)
				var res struct {
					Meta map[string]struct {
						Name string `json:"name"`
					} `json:"_meta"`
				}
				if err := json.Unmarshal(raw, &res); err != nil || res.Meta[jsonrpc.MetaServerInfo].Name != tt.name {
					t.Errorf("%s = %s, want _meta serverInfo %q", req.method, brief(raw), tt.name)
				}
			}
		})
	}
}

// Serving several, a URI two servers list is listed once, the first
// server's, where its reads go.
func TestBridgeAggregateListsAURIOnce(t *testing.T) {
	sock := mcpdtest.Start(t, "a", "legacy", "b", "modern")
	h := startBridgeOf(t, sock, "a", "b")
	legacy := hostEras[1]
	legacy.open(h)
	raw := h.mustRequest(legacy, "1", "resources/list", "")
	var res struct {
		Resources []struct {
			URI string `json:"uri"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range res.Resources {
		if r.URI == "fake://hello" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("resources/list = %s, want fake://hello once", brief(raw))
	}

	// Only the first server's updates of the URI reach the host.
	h.mustRequest(legacy, "2", "resources/subscribe", `"uri":"fake://hello"`)
	updates := 0
	upTo := func(id string) { // counts the updates until the answer to id
		h.Next("the answer to "+id, func(m map[string]json.RawMessage) bool {
			if string(m["method"]) == `"notifications/resources/updated"` {
				updates++
			}
			return string(m["id"]) == id
		})
	}
	for i, server := range []string{"b", "a"} {
		h.Send(`{"jsonrpc":"2.0","id":` + itoa(3+i) + `,"method":"tools/call","params":{"name":"` + server +
			`__changed","arguments":{"uri":"fake://hello"}}}`)
		upTo(itoa(3 + i))
	}
	// The update may come after the answer: ping until it does (a count
	// of pings is no bound on a loaded machine, where 45 took 11 ms).
	deadline := time.Now().Add(10 * time.Second)
	id := 5
	for ; updates == 0 && time.Now().Before(deadline); id++ {
		h.Send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"ping"}`)
		upTo(itoa(id))
		time.Sleep(time.Millisecond) // a pause between pings, not a wait for the update
	}
	h.Send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"ping"}`)
	upTo(itoa(id))
	if updates != 1 {
		t.Errorf("%d resources/updated of fake://hello, want 1: the first server's (the other is left out of the list)", updates)
	}
}

// Serving several, a server's "unknown tool" names the tool as the host
// called it, prefixed.
func TestBridgeAggregateUnknownToolNamedAsCalled(t *testing.T) {
	sock := mcpdtest.Start(t, "a", "legacy", "b", "modern")
	h := startBridgeOf(t, sock, "a", "b")
	legacy := hostEras[1]
	legacy.open(h)
	m := h.request(legacy, "1", "tools/call", `"name":"a__nope","arguments":{}`)
	if e := responseError(t, m); e == nil || !strings.Contains(e.Message, `"a__nope"`) {
		t.Errorf("a__nope: %v, want an error naming a__nope", e)
	}
}

// A call whose arguments are not an object is refused with -32602 in both
// eras, not forwarded; null and absent arguments are no arguments.
func TestBridgeCallArgumentsMustBeAnObject(t *testing.T) {
	sock := mcpdtest.Start(t, "a", "legacy")
	for _, era := range hostEras {
		t.Run(era.name, func(t *testing.T) {
			h := startBridgeOf(t, sock, "a")
			era.open(h)
			for i, args := range []string{`"str"`, `[1]`, `7`} {
				m := h.request(era, itoa(1+i), "tools/call", `"name":"echo","arguments":`+args)
				if e := responseError(t, m); e == nil || e.Code != -32602 || !strings.Contains(e.Message, "arguments must be an object") {
					t.Errorf("arguments %s: %v, want -32602", args, e)
				}
			}
			for i, params := range []string{`"name":"echo","arguments":null`, `"name":"echo"`} {
				if m := h.request(era, itoa(10+i), "tools/call", params); m["error"] != nil {
					t.Errorf("%s: %s", params, m["error"])
				}
			}
		})
	}
}
