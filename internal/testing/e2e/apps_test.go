package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The MCP Apps declaration a UI host makes, and the UI resources of the
// two apps servers (internal/testing/servers/apps).
const (
	uiCaps      = `{"extensions":{"io.modelcontextprotocol/ui":{"mimeTypes":["text/html;profile=mcp-app"]}}}`
	modernUIURI = "ui://apps-request/chart.html"
	legacyUIURI = "ui://apps-init/chart.html"
)

// appsServer is a config entry for the apps test server: gate "request"
// (modern, shapes each request by its declaration) or "init" (legacy,
// decides at initialize by mcpd's declaration).
func appsServer(gate string) map[string]any {
	bridgeBins(nil)
	e := map[string]any{"command": appsBin, "args": []string{"-gate", gate}}
	if gate == "init" {
		e["protocol"] = "legacy"
	}
	return e
}

// appTool is a listed tool as the apps tests look at it.
type appTool struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Meta        *struct {
		UI struct {
			ResourceURI string `json:"resourceUri"`
		} `json:"ui"`
	} `json:"_meta"`
}

// variant is "ui" for the UI variant with resourceUri uri, "text" for the
// text-only variant, or what is wrong.
func (a appTool) variant(uri string) string {
	switch {
	case a.Description == "Chart (UI)" && a.Meta != nil && a.Meta.UI.ResourceURI == uri:
		return "ui"
	case a.Description == "Chart (text)" && a.Meta == nil:
		return "text"
	}
	b, _ := json.Marshal(a)
	return "unexpected " + string(b)
}

// chartIn finds the tool named name in a tools JSON array.
func chartIn(t *testing.T, items, name string) appTool {
	t.Helper()
	var tools []appTool
	if err := json.Unmarshal([]byte(items), &tools); err != nil {
		t.Fatalf("tools %s: %v", items, err)
	}
	for _, tl := range tools {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %q in %s", name, items)
	return appTool{}
}

// checkUIContents checks a resources/read result of the UI resource: the
// app's MIME type and its _meta.ui (csp, permissions) intact.
func checkUIContents(t *testing.T, door, result, uri string) {
	t.Helper()
	var r struct {
		Contents []struct {
			URI      string          `json:"uri"`
			MimeType string          `json:"mimeType"`
			Text     string          `json:"text"`
			Meta     json.RawMessage `json:"_meta"`
		} `json:"contents"`
	}
	if err := json.Unmarshal([]byte(result), &r); err != nil || len(r.Contents) != 1 {
		t.Fatalf("%s: read %s = %s (%v)", door, uri, result, err)
	}
	c := r.Contents[0]
	const meta = `{"ui":{"csp":{"connectDomains":["https://api.example.com"],"resourceDomains":["https://cdn.example.com"]},"permissions":{"clipboardWrite":{}}}}`
	if c.URI != uri || c.MimeType != "text/html;profile=mcp-app" || !strings.Contains(c.Text, "<title>chart</title>") || string(c.Meta) != meta {
		t.Errorf("%s: read %s = %s, want the app's HTML with its _meta.ui", door, uri, result)
	}
}

func grpcTools(t *testing.T, c mcpdv1.McpdClient, server, caps string) string {
	t.Helper()
	r, err := c.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: server, Options: &mcpdv1.CallOptions{ClientCapabilitiesJson: caps}})
	if err != nil || len(r.GetServers()) != 1 || r.GetServers()[0].GetError() != nil {
		t.Fatalf("ListTools %s: %v %v", server, r, err)
	}
	return r.GetServers()[0].GetItemsJson()
}

func grpcRead(t *testing.T, c mcpdv1.McpdClient, server, uri, caps string) string {
	t.Helper()
	r, err := c.ReadResource(ctxT(t), &mcpdv1.ReadResourceRequest{Server: server, Uri: uri, Options: &mcpdv1.CallOptions{ClientCapabilitiesJson: caps}})
	if err != nil || r.GetError() != nil {
		t.Fatalf("ReadResource %s %s: %v %v", server, uri, r, err)
	}
	return r.GetResultJson()
}

// modernPost sends one stateless 2026-07-28 request declaring caps to an
// HTTP endpoint and returns its result.
func modernPost(t *testing.T, url, method, params, name, caps string) string {
	t.Helper()
	if caps == "" {
		caps = "{}"
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps +
		`,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`
	if params != "" {
		meta = params + "," + meta
	}
	status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{`+meta+`}}`, modernHeaders(method, name)...)
	if msgs := sseMessages(body); len(msgs) > 0 {
		body = msgs[len(msgs)-1]
	}
	return resultOf(t, fmt.Sprintf("%s %s (%d)", url, method, status), body)
}

// resultOf is the result of a JSON-RPC response, which must be one.
func resultOf(t *testing.T, what, body string) string {
	t.Helper()
	var m jsonrpc.Message
	if err := json.Unmarshal([]byte(body), &m); err != nil || m.Error != nil || m.Result == nil {
		t.Fatalf("%s: %s", what, body)
	}
	return string(m.Result)
}

// listItems is the items of a list result.
func listItems(t *testing.T, result, key string) string {
	t.Helper()
	var r map[string]json.RawMessage
	if err := json.Unmarshal([]byte(result), &r); err != nil || r[key] == nil {
		t.Fatalf("list result %s has no %s", result, key)
	}
	return string(r[key])
}

// legacyHTTPHost opens a 2025-11-25 session at url declaring caps and
// returns a function sending one request in it.
func legacyHTTPHost(t *testing.T, url, caps string) func(method, params string) string {
	t.Helper()
	status, hdr, body := rawPost(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize at %s = %d %s", url, status, body)
	}
	rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid)
	id := 1
	return func(method, params string) string {
		t.Helper()
		id++
		if params == "" {
			params = "{}"
		}
		status, _, body := rawPost(t, url, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params),
			"Mcp-Session-Id", sid, "MCP-Protocol-Version", "2025-11-25")
		if msgs := sseMessages(body); len(msgs) > 0 {
			body = msgs[len(msgs)-1]
		}
		return resultOf(t, fmt.Sprintf("%s %s (%d)", url, method, status), body)
	}
}

// stdioHost runs `mcpdctl bridge names...` as a legacy host declaring caps
// and returns a function sending one request to it.
func stdioHost(t *testing.T, d *daemon, caps string, names ...string) func(method, params string) string {
	t.Helper()
	return stdioPeer(t, bridgeCommand(d, names...), fmt.Sprint("bridge ", names), caps)
}

// stdioPeer runs cmd, a bridge or a server itself, as a legacy host
// declaring caps; what names it in failures.
func stdioPeer(t *testing.T, cmd *exec.Cmd, what, caps string) func(method, params string) string {
	t.Helper()
	in, out := pipeBridge(t, cmd)
	h := &rawHost{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := h.reply(t, "1"); m.Error != nil {
		t.Fatalf("%s initialize: %v", what, m.Error)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 1
	return func(method, params string) string {
		t.Helper()
		id++
		if params == "" {
			params = "{}"
		}
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		m := h.reply(t, fmt.Sprint(id))
		if m.Error != nil {
			t.Fatalf("%s %s: %v", what, method, m.Error)
		}
		return string(m.Result)
	}
}

// MCP Apps through every door: a host that declared the UI extension
// sees a gating modern server's UI tool with its _meta.ui.resourceUri and
// reads the ui:// resource with its _meta through the same door; a host
// that declared nothing sees the text-only tool. A legacy server decided
// at initialize by what mcpd declared (the extension): every host gets
// its UI variant, the documented shared variant. In the aggregate the
// prefixed tool keeps its resourceUri, which reads through /mcp.
func TestAppsThroughEveryDoor(t *testing.T) {
	d, base := startHTTPDaemon(t, map[string]map[string]any{"am": appsServer("request"), "al": appsServer("init")})
	c := d.client()
	for _, caps := range []string{uiCaps, ""} {
		want := map[string]string{uiCaps: "ui", "": "text"}[caps]
		t.Run("gRPC/"+want, func(t *testing.T) {
			if v := chartIn(t, grpcTools(t, c, "am", caps), "chart").variant(modernUIURI); v != want {
				t.Errorf("modern server: %s, want %s", v, want)
			}
			if v := chartIn(t, grpcTools(t, c, "al", caps), "chart").variant(legacyUIURI); v != "ui" {
				t.Errorf("legacy server: %s, want the shared ui variant", v)
			}
			checkUIContents(t, "gRPC", grpcRead(t, c, "am", modernUIURI, caps), modernUIURI)
			checkUIContents(t, "gRPC", grpcRead(t, c, "al", legacyUIURI, caps), legacyUIURI)
		})
		t.Run("HTTP modern/"+want, func(t *testing.T) {
			for _, ep := range []struct{ path, am, al string }{{"/servers/am/mcp", "chart", ""}, {"/servers/al/mcp", "", "chart"}, {"/mcp", "am__chart", "al__chart"}} {
				tools := listItems(t, modernPost(t, base+ep.path, "tools/list", "", "", caps), "tools")
				if ep.am != "" {
					if v := chartIn(t, tools, ep.am).variant(modernUIURI); v != want {
						t.Errorf("%s modern server: %s, want %s", ep.path, v, want)
					}
					checkUIContents(t, ep.path, modernPost(t, base+ep.path, "resources/read", `"uri":"`+modernUIURI+`"`, modernUIURI, caps), modernUIURI)
				}
				if ep.al != "" {
					if v := chartIn(t, tools, ep.al).variant(legacyUIURI); v != "ui" {
						t.Errorf("%s legacy server: %s, want the shared ui variant", ep.path, v)
					}
					checkUIContents(t, ep.path, modernPost(t, base+ep.path, "resources/read", `"uri":"`+legacyUIURI+`"`, legacyUIURI, caps), legacyUIURI)
				}
			}
		})
		hostCaps := caps
		if hostCaps == "" {
			hostCaps = "{}"
		}
		t.Run("HTTP legacy/"+want, func(t *testing.T) {
			for _, ep := range []struct{ path, am, al string }{{"/servers/am/mcp", "chart", ""}, {"/mcp", "am__chart", "al__chart"}} {
				send := legacyHTTPHost(t, base+ep.path, hostCaps)
				tools := listItems(t, send("tools/list", ""), "tools")
				if v := chartIn(t, tools, ep.am).variant(modernUIURI); v != want {
					t.Errorf("%s modern server: %s, want %s", ep.path, v, want)
				}
				checkUIContents(t, ep.path, send("resources/read", `{"uri":"`+modernUIURI+`"}`), modernUIURI)
				if ep.al != "" {
					if v := chartIn(t, tools, ep.al).variant(legacyUIURI); v != "ui" {
						t.Errorf("%s legacy server: %s, want the shared ui variant", ep.path, v)
					}
				}
			}
		})
		t.Run("stdio bridge/"+want, func(t *testing.T) {
			for _, names := range [][]string{{"am"}, {"am", "al"}} {
				send := stdioHost(t, d, hostCaps, names...)
				name := "chart"
				if len(names) > 1 {
					name = "am__chart"
				}
				if v := chartIn(t, listItems(t, send("tools/list", ""), "tools"), name).variant(modernUIURI); v != want {
					t.Errorf("bridge %v: %s, want %s", names, v, want)
				}
				checkUIContents(t, fmt.Sprint("bridge ", names), send("resources/read", `{"uri":"`+modernUIURI+`"}`), modernUIURI)
			}
		})
	}
}

// Hosts that declare differently at the same time each get their own
// shaped list from a modern server, through gRPC and the shared HTTP
// bridge of modern requests: no cache or coalescing crossover.
func TestAppsShapedListsDoNotCross(t *testing.T) {
	am := appsServer("request")
	am["cache"] = "always" // every list after the first of a declaration is a hit
	d, base := startHTTPDaemon(t, map[string]map[string]any{"am": am})
	c := d.client()
	var wg sync.WaitGroup
	for i := range 8 {
		caps, want := uiCaps, "ui"
		if i%2 == 1 {
			caps, want = "", "text"
		}
		wg.Go(func() {
			for range 10 {
				if v := chartIn(t, grpcTools(t, c, "am", caps), "chart").variant(modernUIURI); v != want {
					t.Errorf("gRPC host declaring %q: %s, want %s", caps, v, want)
					return
				}
				for _, ep := range []struct{ path, name string }{{"/servers/am/mcp", "chart"}, {"/mcp", "am__chart"}} {
					tools := listItems(t, modernPost(t, base+ep.path, "tools/list", "", "", caps), "tools")
					if v := chartIn(t, tools, ep.name).variant(modernUIURI); v != want {
						t.Errorf("%s host declaring %q: %s, want %s", ep.path, caps, v, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	// Each declaration was fetched once and then served from the cache.
	if cs := d.serverStatus(c, "am").GetCache(); cs.GetMisses() != 2 || cs.GetHits()+cs.GetCoalesced() == 0 {
		t.Errorf("cache %v: want two misses (one per declaration), the rest hits", cs)
	}
}
