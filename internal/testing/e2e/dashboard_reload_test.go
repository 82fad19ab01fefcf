package e2e

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// dashboardConfig is a config with one fake server and, unless nil, the
// top-level "dashboard" key.
func dashboardConfig(t *testing.T, on *bool) []byte {
	t.Helper()
	bin, args := fakemcp.Command()
	m := map[string]any{"mcpServers": map[string]any{
		"fake": map[string]any{"command": bin, "args": args, "env": map[string]string{fakemcp.EnvMode: "legacy"}},
	}}
	if on != nil {
		m["dashboard"] = *on
	}
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// getPage answers GET base+"/": its status and whether it is the
// dashboard's page (its token meta).
func getPage(t *testing.T, base string) (int, bool) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, base+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/html")
	status, _, body := rawDo(t, req, "Content-Type", "")
	return status, strings.Contains(body, `name="mcpd-token"`)
}

// TestDashboardOffOnReload: the config's "dashboard" turned false and
// reloaded ("mcpdctl reload") takes the page off "/" while /mcp and
// /servers/NAME/mcp keep serving; true puts it back.
func TestDashboardOffOnReload(t *testing.T) {
	skipShort(t)
	bridgeBins(t)
	dir := tempdir.Short(t)
	cfg := filepath.Join(dir, "config.json")
	on, off := true, false
	if err := os.WriteFile(cfg, dashboardConfig(t, &on), 0o600); err != nil {
		t.Fatal(err)
	}
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), cfg, "--http-listen", "127.0.0.1:0")
	d.waitServing()
	urls, reason := httpStatus(t, d)
	if len(urls) == 0 || reason != "" {
		t.Fatalf("HTTP face not serving: %v %q", urls, reason)
	}
	base, _ := strings.CutSuffix(urls[0], "/mcp")
	c := d.client()
	reload := func(what string) {
		t.Helper()
		resp, err := c.ReloadConfig(ctxT(t), &mcpdv1.ReloadConfigRequest{})
		if err != nil || !resp.GetApplied() {
			t.Fatalf("reload with %s: %v %q", what, err, resp.GetError())
		}
	}
	mcpWorks := func(when string) {
		t.Helper()
		for _, u := range []string{base + "/mcp", base + "/servers/fake/mcp"} {
			sid := legacySession(t, u)
			status, _, body := rawPost(t, u, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", sid)
			if status != http.StatusOK || !strings.Contains(body, `echo"`) {
				t.Errorf("%s: tools/list at %s = %d %s, want the fake's tools", when, u, status, body)
			}
		}
	}

	if status, page := getPage(t, base); status != http.StatusOK || !page {
		t.Fatalf("GET / with the dashboard on = %d (page %v), want the page", status, page)
	}
	mcpWorks("dashboard on")

	saveAsEditor(t, cfg, dashboardConfig(t, &off))
	reload(`"dashboard": false`)
	if status, page := getPage(t, base); status != http.StatusNotFound || page {
		t.Fatalf(`GET / after "dashboard": false = %d (page %v), want 404`, status, page)
	}
	req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, base+"/dashboard/api/status", nil)
	if err != nil {
		t.Fatal(err)
	}
	if status, _, body := rawDo(t, req, "Content-Type", ""); status != http.StatusNotFound || strings.Contains(body, `"servers"`) {
		t.Errorf(`GET /dashboard/api/status after "dashboard": false = %d %s, want 404`, status, body)
	}
	mcpWorks("dashboard off")

	saveAsEditor(t, cfg, dashboardConfig(t, &on))
	reload(`"dashboard": true`)
	if status, page := getPage(t, base); status != http.StatusOK || !page {
		t.Fatalf(`GET / after "dashboard": true = %d (page %v), want the page`, status, page)
	}
	mcpWorks("dashboard on again")
}
