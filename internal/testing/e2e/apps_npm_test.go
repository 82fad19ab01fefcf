package e2e

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// basic-server-vanillajs, the MCP Apps SDK's example server from npm: a
// legacy server that lists its UI tool get-time, with _meta.ui.resourceUri
// and _meta["ui/resourceUri"], to every client, gating on nothing.
const (
	vanillaJS    = "node_modules/@modelcontextprotocol/server-basic-vanillajs/dist/index.js"
	vanillaTool  = "get-time"
	vanillaUIURI = "ui://get-time/mcp-app.html"
)

// vanillaServer is a config entry for basic-server-vanillajs on stdio.
func vanillaServer(t *testing.T) map[string]any {
	node, js := npmJS(t, vanillaJS)
	return map[string]any{"command": node, "args": []string{js, "--stdio"}}
}

// vanillaDirect is what a host declaring the UI extension is shown by
// basic-server-vanillajs itself: its get-time tool and the read of its UI
// resource, as the server wrote them.
func vanillaDirect(t *testing.T) (tool map[string]json.RawMessage, read string) {
	t.Helper()
	e := vanillaServer(t)
	send := stdioPeer(t, exec.Command(e["command"].(string), e["args"].([]string)...), "basic-server-vanillajs", uiCaps)
	tool = rawTool(t, "direct", listItems(t, send("tools/list", ""), "tools"), vanillaTool)
	var meta struct {
		UI struct {
			ResourceURI string `json:"resourceUri"`
		} `json:"ui"`
		Legacy string `json:"ui/resourceUri"`
	}
	if err := json.Unmarshal(tool["_meta"], &meta); err != nil || meta.UI.ResourceURI != vanillaUIURI || meta.Legacy != vanillaUIURI {
		t.Fatalf("basic-server-vanillajs's %s has _meta %s, want both resourceUri keys %s", vanillaTool, tool["_meta"], vanillaUIURI)
	}
	return tool, send("resources/read", `{"uri":"`+vanillaUIURI+`"}`)
}

// rawTool is the tool named name in a tools JSON array, by field, each as
// it was written.
func rawTool(t *testing.T, door, items, name string) map[string]json.RawMessage {
	t.Helper()
	var tools []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(items), &tools); err != nil {
		t.Fatalf("%s: tools %s: %v", door, items, err)
	}
	for _, tl := range tools {
		var n string
		if json.Unmarshal(tl["name"], &n) == nil && n == name {
			return tl
		}
	}
	t.Fatalf("%s: no tool %q in %s", door, name, items)
	return nil
}

// sameTool checks that the tool named name in items is direct's, field by
// field byte-equal, but for the name (an aggregate prefixes it).
func sameTool(t *testing.T, door, items, name string, direct map[string]json.RawMessage) {
	t.Helper()
	got := rawTool(t, door, items, name)
	if len(got) != len(direct) {
		t.Errorf("%s: %s = %v, want %v", door, name, got, direct)
	}
	for k, want := range direct {
		if k != "name" && !bytes.Equal(got[k], want) {
			t.Errorf("%s: %s's %s = %s, want %s as the server lists it", door, name, k, got[k], want)
		}
	}
}

// sameRead checks that a read of the UI resource through door is the
// server's, byte-equal; to a modern host (modern) each field the server
// wrote is, beside the fields of a 2026-07-28 result (modernField).
func sameRead(t *testing.T, door, got, direct string, modern bool) {
	t.Helper()
	if !modern {
		if got != direct {
			t.Errorf("%s: read %s = %.300s…, want byte-equal the server's %.300s…", door, vanillaUIURI, got, direct)
		}
		return
	}
	var g, w map[string]json.RawMessage
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("%s: read %s = %.300s…: %v", door, vanillaUIURI, got, err)
	}
	if err := json.Unmarshal([]byte(direct), &w); err != nil {
		t.Fatal(err)
	}
	for k, v := range w {
		if !bytes.Equal(g[k], v) {
			t.Errorf("%s: read %s's %s = %.300s…, want byte-equal the server's %.300s…", door, vanillaUIURI, k, g[k], v)
		}
	}
	for k := range g {
		if _, ok := w[k]; !ok && !modernField(k, g[k]) {
			t.Errorf("%s: read %s has %s=%s, which the server did not write", door, vanillaUIURI, k, g[k])
		}
	}
}

// modernField reports whether k=v is a field of a 2026-07-28 result mcpd
// adds to a legacy server's: resultType, ttlMs, cacheScope, or a _meta of
// the protocol's own keys (serverInfo).
func modernField(k string, v json.RawMessage) bool {
	switch k {
	case "resultType", "ttlMs", "cacheScope":
		return true
	case "_meta":
		var m map[string]json.RawMessage
		if json.Unmarshal(v, &m) != nil {
			return false
		}
		for mk := range m {
			if !strings.HasPrefix(mk, "io.modelcontextprotocol/") {
				return false
			}
		}
		return true
	}
	return false
}

// A real MCP Apps server that does not gate its UI tool, through every
// door: a host declaring the UI extension sees get-time with its
// _meta.ui.resourceUri, and reads the ui:// resource, each byte-equal to
// what the server shows it directly; in an aggregate the prefixed tool
// keeps its resourceUri, which reads through the same door. A host
// declaring nothing sees the same tool.
func TestAppsNonGatingNPMServer(t *testing.T) {
	tool, read := vanillaDirect(t)
	d, base := startHTTPDaemon(t, map[string]map[string]any{"va": vanillaServer(t), "f": fakeServer("legacy")})
	t.Run("gRPC", func(t *testing.T) {
		c := d.client()
		sameTool(t, "gRPC", grpcTools(t, c, "va", uiCaps), vanillaTool, tool)
		sameRead(t, "gRPC", grpcRead(t, c, "va", vanillaUIURI, uiCaps), read, false)
	})
	doors := []struct{ path, tool string }{{"/servers/va/mcp", vanillaTool}, {"/mcp", "va__" + vanillaTool}}
	t.Run("HTTP modern", func(t *testing.T) {
		for _, ep := range doors {
			sameTool(t, ep.path, listItems(t, modernPost(t, base+ep.path, "tools/list", "", "", uiCaps), "tools"), ep.tool, tool)
			// It gates on nothing: a host declaring nothing sees the same tool.
			sameTool(t, ep.path+" declaring nothing", listItems(t, modernPost(t, base+ep.path, "tools/list", "", "", ""), "tools"), ep.tool, tool)
			sameRead(t, ep.path, modernPost(t, base+ep.path, "resources/read", `"uri":"`+vanillaUIURI+`"`, vanillaUIURI, uiCaps), read, true)
		}
	})
	t.Run("HTTP legacy", func(t *testing.T) {
		for _, ep := range doors {
			send := legacyHTTPHost(t, base+ep.path, uiCaps)
			sameTool(t, ep.path, listItems(t, send("tools/list", ""), "tools"), ep.tool, tool)
			sameRead(t, ep.path, send("resources/read", `{"uri":"`+vanillaUIURI+`"}`), read, false)
		}
	})
	t.Run("stdio bridge", func(t *testing.T) {
		for _, door := range []struct {
			names []string
			tool  string
		}{{[]string{"va"}, vanillaTool}, {[]string{"va", "f"}, "va__" + vanillaTool}} {
			send := stdioHost(t, d, uiCaps, door.names...)
			what := "bridge " + door.tool
			sameTool(t, what, listItems(t, send("tools/list", ""), "tools"), door.tool, tool)
			sameRead(t, what, send("resources/read", `{"uri":"`+vanillaUIURI+`"}`), read, false)
		}
	})
}
