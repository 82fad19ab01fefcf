package bridge_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
)

// hostEra is how a host of one protocol era talks to the bridge.
type hostEra struct {
	name string
	meta string // the _meta every request of the host carries, if any
}

var hostEras = []hostEra{{"modern host", modernMeta}, {"legacy host", ""}}

// open runs the era's handshake with the bridge.
func (e hostEra) open(h *bridgeHost) {
	h.t.Helper()
	if e.meta != "" {
		h.mustRequest(e, "0", "server/discover", "")
		return
	}
	h.mustRequest(e, "0", "initialize", `"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}`)
	h.Send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// request sends method with the era's _meta and the given params members,
// and returns the bridge's response.
func (h *bridgeHost) request(e hostEra, id, method, params string) map[string]json.RawMessage {
	h.t.Helper()
	members := strings.Join(nonEmpty(e.meta, params), ",")
	h.Send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":{` + members + `}}`)
	return h.Response(id)
}

// mustRequest is request for a request that must succeed; it returns the
// result.
func (h *bridgeHost) mustRequest(e hostEra, id, method, params string) json.RawMessage {
	h.t.Helper()
	m := h.request(e, id, method, params)
	if m["error"] != nil || m["result"] == nil {
		h.t.Fatalf("%s %s: %s", method, params, m["error"])
	}
	return m["result"]
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// responseError decodes the error of a response; nil when it has none.
func responseError(t *testing.T, m map[string]json.RawMessage) *jsonrpc.Error {
	t.Helper()
	if m["error"] == nil {
		return nil
	}
	var e jsonrpc.Error
	if err := json.Unmarshal(m["error"], &e); err != nil {
		t.Fatalf("error %s: %v", m["error"], err)
	}
	return &e
}

// The bridge answers every list in one page and issues no cursor: a list
// without one, or with an empty or null one, is the whole list; any other
// cursor is invalid params.
func TestBridgeListCursor(t *testing.T) {
	sock := mcpdtest.Start(t, "a", "modern,templates", "b", "legacy")
	for _, era := range hostEras {
		t.Run(era.name, func(t *testing.T) {
			for _, args := range [][]string{{"a"}, {"a", "b"}} {
				h := startBridgeOf(t, sock, args...)
				era.open(h)
				for i, method := range []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"} {
					checkCursors(t, h, era, i, method)
				}
			}
		})
	}
}

// checkCursors lists method with good and bad cursors.
func checkCursors(t *testing.T, h *bridgeHost, era hostEra, n int, method string) {
	t.Helper()
	id := func(k int) string { return itoa(100*(n+1) + k) }
	var whole string
	for k, cursor := range []string{"", `"cursor":""`, `"cursor":null`} {
		res := h.mustRequest(era, id(k), method, cursor)
		var page map[string]json.RawMessage
		if err := json.Unmarshal(res, &page); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		items := string(page[jsonrpc.ListKeys[method]])
		if !strings.HasPrefix(items, "[{") || page["nextCursor"] != nil {
			t.Errorf("%s with %s = %s, want every item in one page", method, cursor, brief(res))
		}
		if k == 0 {
			whole = items
		} else if items != whole {
			t.Errorf("%s with %s lists %s, without a cursor %s", method, cursor, brief([]byte(items)), brief([]byte(whole)))
		}
	}
	for k, cursor := range []string{`"cursor":"bogus"`, `"cursor":"eyJwYWdlIjogMn0="`, `"cursor":7`} {
		m := h.request(era, id(10+k), method, cursor)
		e := responseError(t, m)
		if e == nil || e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(e.Message, "cursor") {
			t.Errorf("%s with %s answered %s %s, want error %d about the cursor", method, cursor, brief(m["result"]), m["error"], jsonrpc.CodeInvalidParams)
		}
	}
}

// A host may complete a resource template's argument without listing the
// templates through this bridge first (it kept them from an earlier
// session): the bridge finds the server that has the template.
func TestBridgeCompletesUnlistedTemplate(t *testing.T) {
	for _, child := range []struct{ name, with, without string }{
		{"modern child", "modern,templates", "legacy"},
		{"legacy child", "legacy,templates", "modern"},
	} {
		t.Run(child.name, func(t *testing.T) {
			// Only "b" has the template; "a" answers completion/complete
			// with method not found.
			sock := mcpdtest.Start(t, "a", child.without, "b", child.with)
			for _, era := range hostEras {
				t.Run(era.name, func(t *testing.T) {
					h := startBridgeOf(t, sock, "a", "b")
					era.open(h)
					checkTemplateCompletion(t, h, era)
				})
			}
		})
	}
}

func checkTemplateCompletion(t *testing.T, h *bridgeHost, era hostEra) {
	t.Helper()
	complete := func(id, uri string) map[string]json.RawMessage {
		return h.request(era, id, "completion/complete",
			`"ref":{"type":"ref/resource","uri":"`+uri+`"},"argument":{"name":"name","value":"a"}`)
	}
	m := complete("1", fakemcp.GreetingTemplate)
	var res struct {
		Completion struct {
			Values []string `json:"values"`
		} `json:"completion"`
	}
	if err := json.Unmarshal(m["result"], &res); err != nil || m["error"] != nil ||
		strings.Join(res.Completion.Values, ",") != "ada,alan" {
		t.Errorf("completion of an unlisted template answered %s %s, want ada and alan", m["result"], m["error"])
	}
	m = complete("2", "fake://nowhere/{name}")
	if e := responseError(t, m); e == nil || e.Code != jsonrpc.CodeInvalidParams || !strings.Contains(e.Message, "fake://nowhere/{name}") {
		t.Errorf("completion of a template no server has answered %s %s, want error %d naming it", m["result"], m["error"], jsonrpc.CodeInvalidParams)
	}
	m = h.request(era, "3", "completion/complete", `"ref":{"type":"ref/resource"},"argument":{"name":"name","value":""}`)
	if e := responseError(t, m); e == nil || e.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("completion without a uri answered %s %s, want error %d", m["result"], m["error"], jsonrpc.CodeInvalidParams)
	}
}

// brief is the start of a long JSON text, for failure messages.
func brief(raw []byte) string {
	if len(raw) > 200 {
		return string(raw[:200]) + "…"
	}
	return string(raw)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
