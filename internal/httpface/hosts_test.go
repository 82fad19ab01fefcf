package httpface

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/bridge"
)

// modernPost sends one 2026-07-28 tools/list of the host name on c.
func modernPost(t *testing.T, c *http.Client, url, name string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"` + name + `","version":"1"}}}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/list")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s: POST: %v", name, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"tools"`) {
		t.Fatalf("%s: tools/list: %d %s", name, resp.StatusCode, b)
	}
}

// Each modern host is one app, by its clientInfo name, whichever of its
// connections its requests come on, listed until every one of them has
// closed; another host's stays.
func TestHTTPModernHostIsAnAppUntilItsConnectionsClose(t *testing.T) {
	srv, be := newDaemon(t)
	h := bridge.NewHTTPHandler(be, bridge.HTTPOptions{Warnf: t.Logf})
	ln, err := Listen(must(ParseAddr("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	f := Serve(ln, h, Options{Logger: zaptest.NewLogger(t), Server: srv, WantUID: -1})
	t.Cleanup(func() {
		h.Close()
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	url := f.URL() + "/mcp"
	client := func() (*http.Client, *http.Transport) {
		tr := &http.Transport{}
		t.Cleanup(tr.CloseIdleConnections)
		return &http.Client{Transport: tr}, tr
	}
	a1, a1tr := client()
	a2, a2tr := client()
	b, _ := client()
	modernPost(t, a1, url, "modern-a")
	modernPost(t, a2, url, "modern-a") // the same host on a second connection
	modernPost(t, b, url, "modern-b")
	names := []string{"modern-a", "modern-b", DefaultAppName}
	count := func() map[string]int {
		_, apps := srv.Status()
		n := map[string]int{}
		for _, a := range apps {
			n[a.Name]++
		}
		return n
	}
	if n := count(); n["modern-a"] != 1 || n["modern-b"] != 1 || n[DefaultAppName] != 0 {
		t.Fatalf("apps %v, want one each of %v and no connection's", n, names[:2])
	}
	a1tr.CloseIdleConnections()
	modernPost(t, a2, url, "modern-a") // still there on its other connection
	if n := count(); n["modern-a"] != 1 {
		t.Fatalf("apps %v after one of modern-a's connections closed, want it still listed once", n)
	}
	a2tr.CloseIdleConnections()
	waitFor(t, "modern-a's app to go with its last connection", func() bool {
		n := count()
		return n["modern-a"] == 0 && n["modern-b"] == 1
	})
}
