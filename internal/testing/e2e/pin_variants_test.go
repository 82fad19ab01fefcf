package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Under "enforce", a 2026-07-28 server that shapes its tool list by the
// client's declaration (the MCP Apps gating fixture) has each variant
// pinned on its first use: a UI host and a host declaring nothing each get
// and call their own variant of chart, and neither is a change. A real
// change of the UI variant (its pinned definition edited while mcpd is
// down) is withheld from the UI host only, shown by tools diff with its
// variant, and approved.
func TestPinsPerDeclarationVariant(t *testing.T) {
	dir := tempdir.Short(t)
	srv := appsServer("request")
	srv["pin"] = "enforce"
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"apps": srv}})
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	stateDir := filepath.Join(dir, "state")
	start := func() (*daemon, string) {
		d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), config, "--state-dir", stateDir, "--http-listen", "127.0.0.1:0")
		d.waitServing()
		urls, reason := httpStatus(t, d)
		if len(urls) == 0 || reason != "" {
			t.Fatalf("HTTP face not serving: %v %q", urls, reason)
		}
		return d, strings.TrimSuffix(urls[0], "/mcp") + "/servers/apps/mcp"
	}
	d, url := start()
	hosts := []struct{ name, caps, variant, answer string }{
		{"ui host", uiCaps, "ui", "chart: with UI"},
		{"plain host", "", "text", "chart: text only"},
	}
	for _, h := range hosts {
		items := listItems(t, modernPost(t, url, "tools/list", "", "", h.caps), "tools")
		if got := chartIn(t, items, "chart").variant(modernUIURI); got != h.variant {
			t.Fatalf("%s lists chart %s, want its %s variant", h.name, got, h.variant)
		}
		if res := modernPost(t, url, "tools/call", `"name":"chart","arguments":{}`, "chart", h.caps); !strings.Contains(res, h.answer) {
			t.Fatalf("%s: call = %s", h.name, res)
		}
	}
	c := d.client()
	if ch, err := c.GetToolChanges(ctxT(t), &mcpdv1.GetToolChangesRequest{Server: "apps"}); err != nil || len(ch.GetChanges()) != 0 {
		t.Fatalf("tool changes after both variants: %v %v, want none", ch.GetChanges(), err)
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait()

	editUIPin(t, filepath.Join(stateDir, "pins", "apps.json"))
	d, url = start()
	c = d.client()
	if items := listItems(t, modernPost(t, url, "tools/list", "", "", uiCaps), "tools"); strings.Contains(items, `"chart"`) {
		t.Errorf("the UI host is listed the changed chart: %s", items)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"chart","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + uiCaps + `,"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}}}`
	if status, _, out := rawPost(t, url, body, modernHeaders("tools/call", "chart")...); status != http.StatusOK || !strings.Contains(out, "withheld") {
		t.Errorf("the UI host's call of the changed chart = %d %s, want it withheld", status, out)
	}
	items := listItems(t, modernPost(t, url, "tools/list", "", "", ""), "tools")
	if got := chartIn(t, items, "chart").variant(modernUIURI); got != "text" {
		t.Errorf("the plain host lists chart %s, want its unchanged text variant", got)
	}
	ch, err := c.GetToolChanges(ctxT(t), &mcpdv1.GetToolChangesRequest{Server: "apps", Options: &mcpdv1.CallOptions{ClientCapabilitiesJson: uiCaps}})
	if err != nil || len(ch.GetChanges()) != 1 {
		t.Fatalf("tool changes: %v %v, want the UI variant's chart", ch.GetChanges(), err)
	}
	if x := ch.GetChanges()[0]; x.GetTool() != "chart" || x.GetVariant() == "" || !strings.Contains(x.GetCapabilitiesJson(), "io.modelcontextprotocol/ui") {
		t.Errorf("change %v, want chart of the UI variant", x)
	}
	out, err := exec.Command(mcpdctlBin, "--socket", d.socket, "tools", "diff", "apps").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "variant") || !strings.Contains(string(out), "io.modelcontextprotocol/ui") {
		t.Errorf("tools diff: %v\n%s", err, out)
	}
	if _, err := c.ApproveTools(ctxT(t), &mcpdv1.ApproveToolsRequest{Server: "apps", Tools: []string{"chart"}}); err != nil {
		t.Fatalf("approve: %v", err)
	}
	if res := modernPost(t, url, "tools/call", `"name":"chart","arguments":{}`, "chart", uiCaps); !strings.Contains(res, "chart: with UI") {
		t.Errorf("the UI host's call after approval = %s", res)
	}
}

// editUIPin changes the pinned definition of chart in the UI variant of a
// pins file (the one pinned with the UI description), as an approval of an
// older server would have left it.
func editUIPin(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f map[string]json.RawMessage
	var variants map[string]struct {
		Capabilities json.RawMessage `json:"capabilities"`
		Tools        pin.Tools       `json:"tools"`
	}
	if err := json.Unmarshal(data, &f); err != nil || json.Unmarshal(f["variants"], &variants) != nil || len(variants) != 2 {
		t.Fatalf("pins file %s: want two variants", data)
	}
	_, old, err := pin.ParseTool(json.RawMessage(`{"name":"chart","description":"Chart (UI), older","inputSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	edited := 0
	for k, v := range variants {
		if strings.Contains(string(v.Tools["chart"].Text), "Chart (UI)") {
			v.Tools["chart"] = old
			variants[k] = v
			edited++
		}
	}
	if edited != 1 {
		t.Fatalf("pins file %s: want one UI variant", data)
	}
	f["variants"], _ = json.Marshal(variants)
	out, _ := json.Marshal(f)
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
}
