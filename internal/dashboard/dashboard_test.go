package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestStatusEndpoint: the status lists every configured server with its
// state, reason, transport and memory, and the apps.
func TestStatusEndpoint(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	var snap snapshot
	c.get("/dashboard/api/status", &snap)
	got := map[string]serverView{}
	for _, s := range snap.Servers {
		got[s.Name] = s
	}
	if len(got) != 3 {
		t.Fatalf("servers %v, want alpha, beta, pinned", snap.Servers)
	}
	if a := got["alpha"]; a.State != "ready" || a.Pid == 0 || a.Transport != "stdio" || a.Era != "legacy" || a.Memory == nil || a.Memory.RSSBytes == 0 {
		t.Errorf("alpha %+v, want ready with a pid, legacy stdio, memory", a)
	}
	if b := got["beta"]; b.State != "stopped" || b.Reason != "starts on first use" {
		t.Errorf("beta %+v, want stopped, starting on first use", b)
	}
	if p := got["pinned"]; p.PinMode != "enforce" || len(p.EnvKeys) != 3 {
		t.Errorf("pinned %+v, want pin enforce and its env keys", p)
	}
	if !snap.AuditOn {
		t.Error("audit log reported off")
	}
}

// TestToolsCallLogsAudit: the server panel's endpoints: tools with their
// schemas, a call with its result (audited), the stderr tail.
func TestToolsCallLogsAudit(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	var tools struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	c.get("/dashboard/api/servers/alpha/tools", &tools)
	var echo bool
	for _, tl := range tools.Tools {
		echo = echo || tl.Name == "echo" && len(tl.InputSchema) > 0
	}
	if !echo {
		t.Fatalf("tools %+v: no echo with a schema", tools.Tools)
	}
	code, body := c.post("/dashboard/api/servers/alpha/call", c.token, `{"tool":"echo","arguments":{"message":"hello dashboard"}}`)
	if code != http.StatusOK || !strings.Contains(body, "hello dashboard") {
		t.Fatalf("call = %d %s", code, body)
	}
	var aud struct {
		On      bool        `json:"on"`
		Records []auditView `json:"records"`
	}
	c.get("/dashboard/api/servers/alpha/audit", &aud)
	if !aud.On || len(aud.Records) == 0 || aud.Records[0].Name != "echo" || aud.Records[0].App != AppName {
		t.Fatalf("audit %+v, want the echo call by %q first", aud, AppName)
	}
	var logs struct {
		Lines []logLine `json:"lines"`
	}
	c.get("/dashboard/api/servers/alpha/logs", &logs) // a fake writes little; the call must just work
	if code, _ := c.post("/dashboard/api/servers/nosuch/restart", c.token, ""); code != http.StatusNotFound {
		t.Errorf("restart of an unknown server = %d, want 404", code)
	}
}

// TestEventsStream: the stream starts with a snapshot, and a restart
// shows as state events and a fresh snapshot with a new pid.
func TestEventsStream(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/dashboard/api/events", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	old := int64(h.status("alpha").Pid)
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var kind string
	restarted, states := false, map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if k, ok := strings.CutPrefix(line, "event: "); ok {
			kind = k
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch kind {
		case "snapshot":
			if !restarted {
				restarted = true
				if code, body := c.post("/dashboard/api/servers/alpha/restart", c.token, ""); code != http.StatusOK {
					t.Fatalf("restart = %d %s", code, body)
				}
				continue
			}
			var s snapshot
			json.Unmarshal([]byte(data), &s)
			for _, sv := range s.Servers {
				if sv.Name == "alpha" && sv.State == "ready" && sv.Pid != old && states["ready"] {
					return
				}
			}
		case "state":
			var ev stateEvent
			json.Unmarshal([]byte(data), &ev)
			if ev.Server == "alpha" {
				states[ev.State] = true
			}
		}
	}
	t.Fatalf("stream ended (%v) before alpha was ready again with a new pid; states seen %v", sc.Err(), states)
}

// TestPostNeedsOwnToken: a POST without the token, or with another
// session's, is refused and changes nothing; with its own it acts.
func TestPostNeedsOwnToken(t *testing.T) {
	h := newHarness(t)
	c, other := h.newClient(), h.newClient()
	pid := h.status("alpha").Pid
	for _, tt := range []struct{ name, token string }{{"none", ""}, {"other session's", other.token}, {"forged", strings.Repeat("0", 64)}} {
		if code, body := c.post("/dashboard/api/servers/alpha/restart", tt.token, ""); code != http.StatusForbidden {
			t.Errorf("token %s: %d %s, want 403", tt.name, code, body)
		}
	}
	// A request without the session cookie, though with a valid token.
	bare := &client{h: h, http: &http.Client{}}
	if code, _ := bare.post("/dashboard/api/servers/alpha/stop", c.token, ""); code != http.StatusForbidden {
		t.Errorf("no cookie: %d, want 403", code)
	}
	time.Sleep(300 * time.Millisecond)
	if s := h.status("alpha"); s.Pid != pid || stateName(s.State) != "ready" {
		t.Fatalf("after refused POSTs: pid %d state %s, want %d ready", s.Pid, stateName(s.State), pid)
	}
	if code, body := c.post("/dashboard/api/servers/alpha/restart", c.token, ""); code != http.StatusOK {
		t.Fatalf("with its token: %d %s", code, body)
	}
	if s := h.waitState("alpha", "ready"); s.Pid == pid {
		t.Fatal("restart kept the pid")
	}
	// GET does not change state: the action paths take only POST.
	if code, _ := c.do(http.MethodGet, "/dashboard/api/servers/alpha/stop", "", nil); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of an action = %d, want 405", code)
	}
}

// TestForeignOriginHost: another Origin or Host, and a cross-site fetch,
// are refused.
func TestForeignOriginHost(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	tests := []struct {
		name   string
		method string
		path   string
		hdr    map[string]string
	}{
		{"foreign Origin on the page", http.MethodGet, "/", map[string]string{"Origin": "http://evil.example"}},
		{"foreign Origin on a POST", http.MethodPost, "/dashboard/api/servers/alpha/stop", map[string]string{"Origin": "http://evil.example", tokenHeader: c.token}},
		{"loopback Origin on another port", http.MethodPost, "/dashboard/api/servers/alpha/stop", map[string]string{"Origin": "http://127.0.0.1:1", tokenHeader: c.token}},
		{"rebound Host", http.MethodGet, "/dashboard/api/status", map[string]string{"Host": "evil.example" + h.base[strings.LastIndex(h.base, ":"):]}},
		{"cross-site fetch", http.MethodGet, "/dashboard/api/status", map[string]string{"Sec-Fetch-Site": "cross-site"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if code, body := c.do(tt.method, tt.path, "", tt.hdr); code != http.StatusForbidden {
				t.Fatalf("%s %s = %d %s, want 403", tt.method, tt.path, code, body)
			}
		})
	}
	if s := h.status("alpha"); stateName(s.State) != "ready" {
		t.Fatalf("alpha %s after refused requests", stateName(s.State))
	}
}

// TestNoSecrets: no response of the page or its API carries a server's
// env value.
func TestNoSecrets(t *testing.T) {
	h := newHarness(t)
	c := h.newClient()
	c.post("/dashboard/api/servers/alpha/call", c.token, `{"tool":"echo","arguments":{"message":"x"}}`)
	_, page := c.do(http.MethodGet, "/", "", nil)
	bodies := map[string]string{"/": page}
	for _, p := range []string{"/dashboard/api/status", "/dashboard/assets/app.js"} {
		bodies[p] = c.get(p, nil)
	}
	for _, name := range []string{"alpha", "beta", "pinned"} {
		for _, what := range []string{"tools", "pins", "logs", "audit"} {
			p := "/dashboard/api/servers/" + name + "/" + what
			bodies[p] = c.get(p, nil)
		}
	}
	// The first snapshot of the event stream.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, h.base+"/dashboard/api/events", nil)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			bodies["events"] = d
			break
		}
	}
	resp.Body.Close()
	if bodies["events"] == "" {
		t.Fatal("no snapshot on the event stream")
	}
	for p, b := range bodies {
		if strings.Contains(b, secretValue) {
			t.Errorf("%s carries the secret env value", p)
		}
	}
	if !strings.Contains(bodies["/dashboard/api/status"], "API_TOKEN") {
		t.Error("status does not name the env key (only its value is secret)")
	}
}

// envClient makes the test binary a client that GETs the URL in
// envClientURL and prints the status code (TestOtherUIDRefused).
const (
	envClient    = "MCPD_DASHBOARD_TEST_CLIENT"
	envClientURL = "MCPD_DASHBOARD_TEST_URL"
)

func clientMain() int {
	resp, err := http.Get(os.Getenv(envClientURL))
	if err != nil {
		os.Stdout.WriteString("error " + err.Error())
		return 0
	}
	resp.Body.Close()
	os.Stdout.WriteString(strconv.Itoa(resp.StatusCode))
	return 0
}

// TestOtherUIDRefused: a browser of another user gets 403 for the page
// and the API; our own uid is served.
func TestOtherUIDRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	h := newHarness(t)
	bin := clientCopy(t)
	run := func(path string, cred *syscall.Credential) string {
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), envClient+"=1", envClientURL+"="+h.base+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client: %v", err)
		}
		return string(out)
	}
	other := &syscall.Credential{Uid: 65534, Gid: 65534}
	for _, p := range []string{"/", "/dashboard/api/status", "/dashboard/api/events"} {
		if got := run(p, nil); got != "200" {
			t.Errorf("own uid GET %s: %s, want 200", p, got)
		}
		if got := run(p, other); got != "403" {
			t.Errorf("uid 65534 GET %s: %s, want 403", p, got)
		}
	}
}

// clientCopy is a copy of the test binary other uids can run.
func clientCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dashclient")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	self, err := os.ReadFile(must(os.Executable()))
	if err != nil {
		t.Fatal(err)
	}
	p := dir + "/client"
	if err := os.WriteFile(p, self, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}
