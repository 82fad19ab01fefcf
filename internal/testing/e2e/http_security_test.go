package e2e

import (
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"sec","version":"1"}}}`

// A client process of another user is refused on the TCP port with 403,
// and mcpd logs why; the same request from this user is served.
func TestHTTPRefusesAnotherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed")
	}
	d, base := startHTTPDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	run := func(uid uint32) string {
		cmd := exec.Command(curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "POST",
			"-H", "Content-Type: application/json", "-H", "Accept: application/json, text/event-stream",
			"--data", pingBody, base+"/servers/g/mcp")
		cmd.Dir = "/"
		cmd.Env = []string{"PATH=/usr/bin:/bin"}
		if uid != 0 {
			cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("curl as uid %d: %v %s", uid, err, out)
		}
		return string(out)
	}
	const throwaway = 54321 // no such user: a uid nobody on the machine has
	if got := run(throwaway); got != "403" {
		t.Errorf("uid %d got HTTP %s, want 403", throwaway, got)
	}
	poll(t, "mcpd to log the refusal", func() (bool, error) {
		return strings.Contains(d.stderr.String(), "HTTP connection refused: another user"), nil
	})
	if got := run(0); got != "200" {
		t.Errorf("this user got HTTP %s, want 200", got)
	}
}

// DNS rebinding and cross-origin pages: a Host that is not this machine's
// loopback with mcpd's port, or an Origin that is not this machine, gets
// 403 before reaching any server; loopback names are served.
func TestHTTPRefusesForeignHostAndOrigin(t *testing.T) {
	_, base := startHTTPDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	for _, c := range []struct {
		host, origin string
		status       int
	}{
		{"evil.example", "", 403},
		{"evil.example:" + port, "", 403},
		{"127.0.0.1:1", "", 403},
		{"", "http://evil.example", 403},
		{"", "http://evil.example:" + port, 403},
		{"", "null", 403},
		{"localhost:" + port, "", 200},
		{"", "http://localhost:" + port, 200},
		{"", "http://127.0.0.1:" + port, 200},
		{"", "http://127.0.0.1", 403},
	} {
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodPost, base+"/servers/g/mcp", strings.NewReader(pingBody))
		if err != nil {
			t.Fatal(err)
		}
		if c.host != "" {
			req.Host = c.host
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		status, _, body := rawDo(t, req)
		if status != c.status {
			t.Errorf("Host %q Origin %q: %d %s, want %d", c.host, c.origin, status, body, c.status)
		}
		if status == 403 && (jsonError(t, body) != -32000 || !strings.Contains(body, "Forbidden")) {
			t.Errorf("Host %q Origin %q: refusal %s, want a JSON-RPC Forbidden error", c.host, c.origin, body)
		}
	}
}
