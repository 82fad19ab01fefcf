package e2e

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
)

// httpStatus reads the HTTP face's entry of "mcpdctl status --json".
func httpStatus(t *testing.T, d *daemon) (urls []string, offReason string) {
	t.Helper()
	cmd := exec.Command(mcpdctlBin, "--socket", d.socket, "status", "--json")
	cmd.Env = daemonEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpdctl status --json: %v: %s", err, out)
	}
	var st struct {
		HTTP struct {
			URLs      []string `json:"urls"`
			OffReason string   `json:"off_reason"`
		} `json:"http"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status JSON %s: %v", out, err)
	}
	return st.HTTP.URLs, st.HTTP.OffReason
}

// TestHTTPFaceServes: mcpd on 127.0.0.1:0 reports its bound URL in status,
// and a request there reaches the MCP handler.
func TestHTTPFaceServes(t *testing.T) {
	bridgeBins(t)
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), writeConfig(t, dir, map[string]server{"fake": {Mode: "legacy"}}),
		"--http-listen", "127.0.0.1:0")
	d.waitServing()
	urls, reason := httpStatus(t, d)
	if len(urls) != 2 || !strings.HasPrefix(urls[0], "http://127.0.0.1:") || !strings.HasSuffix(urls[1], "/servers/fake/mcp") || reason != "" {
		t.Fatalf("http status %v %q: want the aggregate and the fake's URL", urls, reason)
	}
	post := func(url, sid, body string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(data)
	}
	resp, body := post(urls[1], "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize at %s = %d (session %q) %s, want a legacy session", urls[1], resp.StatusCode, sid, body)
	}
	if resp, body = post(urls[1], sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Fatalf("tools/list in the session = %d %s, want the fake's tools", resp.StatusCode, body)
	}
}

// TestHTTPFaceDefaultBusy: with the default address taken, mcpd runs
// without the face and status says why.
func TestHTTPFaceDefaultBusy(t *testing.T) {
	bridgeBins(t)
	if l, err := net.Listen("tcp", "127.0.0.1:6273"); err == nil {
		defer l.Close()
	} // else someone else has it, which is the case under test too
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), filepath.Join(dir, "none.json"), "--http-listen", "")
	d.waitServing()
	urls, reason := httpStatus(t, d)
	if len(urls) != 0 || !strings.Contains(reason, "in use") {
		t.Fatalf("http status %v %q: want off because the address is in use", urls, reason)
	}
}

// TestHTTPFaceExplicitBusy: an address that was asked for and is taken
// stops mcpd with a message.
func TestHTTPFaceExplicitBusy(t *testing.T) {
	skipShort(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), filepath.Join(dir, "none.json"), "--http-listen", l.Addr().String())
	err = d.wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("mcpd exited with %v, want status 1", err)
	}
	if out := d.stderr.String(); !strings.Contains(out, "listen on "+l.Addr().String()) || !strings.Contains(out, "in use") {
		t.Errorf("output %q does not explain the failure", out)
	}
}
