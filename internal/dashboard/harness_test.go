package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/httpface"
	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// secretValue is the env value of the fake servers that must never reach
// the page or its API.
const secretValue = "s3cr3t-dashboard-value-4711"

// harness is mcpd's service with fake children, the dashboard behind the
// HTTP face's guards, on a loopback port.
type harness struct {
	t     *testing.T
	srv   *core.Service
	sup   *supervisor.Supervisor
	face  *httpface.Face
	dash  *Dashboard
	base  string // http://127.0.0.1:PORT
	descs string // the pinned server's descriptions file
	logs  *observer.ObservedLogs
}

// newHarness starts servers "alpha" (autostart) and "beta" (lazy), legacy
// fakes, and "pinned" (autostart, pin enforce, descriptions from a file),
// each with a secret in its env, and any more servers given (remote ones:
// mcpd's OAuth, with its credentials in the test's directory, authorizes
// them and runs their logins, as in the daemon).
func newHarness(t *testing.T, more ...config.Server) *harness {
	t.Helper()
	obsCore, logs := observer.New(zapcore.DebugLevel)
	log := zaptest.NewLogger(t, zaptest.WrapOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, obsCore) })))
	dir := t.TempDir()
	h := &harness{t: t, descs: filepath.Join(dir, "descs.json"), logs: logs}
	h.describe(map[string]string{})
	cmd, args := fakemcp.Command()
	env := func(extra ...string) map[string]string {
		m := map[string]string{fakemcp.EnvMode: "legacy", "API_TOKEN": secretValue}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = extra[i+1]
		}
		return m
	}
	servers := append([]config.Server{
		{Name: "alpha", Command: cmd, Args: args, Autostart: true, Env: env(), RequestTimeout: 30 * time.Second},
		{Name: "beta", Command: cmd, Args: args, Env: env(), RequestTimeout: 30 * time.Second},
		{Name: "pinned", Command: cmd, Args: args, Autostart: true, Env: env(fakemcp.EnvDescriptions, h.descs), Pin: "enforce", RequestTimeout: 30 * time.Second},
	}, more...)
	specs := make([]supervisor.Spec, len(servers))
	for i, s := range servers {
		specs[i] = supervisor.Spec(s)
	}
	auth := oauth.NewManager(dir, log.Named("oauth"), nil)
	var srv *core.Service
	h.sup = supervisor.New(supervisor.Options{
		Specs: specs, Logger: log, ClientInfo: json.RawMessage(`{"name":"mcpd-test","version":"0"}`),
		Pins:          pin.NewBook(pin.NewStore(filepath.Join(dir, "pins"))),
		NewAuthorizer: core.OAuthAuthorizers(auth),
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			return srv.ServeChildRequest(ctx, server, method, params)
		},
	})
	alog, err := audit.Open(filepath.Join(dir, "audit.jsonl"), audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { alog.Close() })
	srv = core.New(h.sup, core.Options{Logger: log, Audit: core.AuditOptions{Log: alog}})
	srv.SetRemoteAuth(core.NewRemoteAuth(auth, h.sup))
	h.srv = srv
	h.serve(log, servers)
	h.waitState("alpha", "ready")
	h.waitState("pinned", "ready")
	return h
}

// serve runs the supervisor, and the dashboard behind the HTTP face's
// guards on a loopback port, until the test ends.
func (h *harness) serve(log *zap.Logger, servers []config.Server) {
	t := h.t
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- h.sup.Run(ctx) }()
	be := httpface.NewBackend(h.srv)
	h.dash = New(Options{Server: h.srv, Backend: be, Logger: log, Refresh: 500 * time.Millisecond})
	h.dash.SetConfig(&config.Config{Servers: servers})
	ln, err := httpface.Listen(must(httpface.ParseAddr("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	mux := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.dash.Owns(r.URL.Path) {
			h.dash.ServeHTTP(w, r)
			return
		}
		http.NotFound(w, r)
	})
	h.face = httpface.Serve(ln, mux, httpface.Options{Logger: log, Server: h.srv, WantUID: -1})
	h.base = h.face.URL()
	t.Cleanup(func() {
		h.face.Close()
		h.dash.Close()
		be.Close()
		cancel()
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("supervisor: %v", err)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// describe writes the pinned server's tool descriptions.
func (h *harness) describe(m map[string]string) {
	data, _ := json.Marshal(m)
	if err := os.WriteFile(h.descs, data, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

// status is the server's status from the service.
func (h *harness) status(name string) service.ServerStatus {
	h.t.Helper()
	st, _ := h.srv.Status()
	for _, s := range st.Servers {
		if s.Name == name {
			return s
		}
	}
	h.t.Fatalf("no server %q", name)
	return service.ServerStatus{}
}

// stateName is the name of a state, as the page shows it.
func stateName(s service.State) string { return string(s) }

// waitState waits until the server's state is state (stateName's words).
func (h *harness) waitState(name, state string) service.ServerStatus {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		s := h.status(name)
		if stateName(s.State) == state {
			return s
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("server %s: state %s, want %s", name, stateName(s.State), state)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// client is one browser session: a cookie jar and the page's token.
type client struct {
	h     *harness
	http  *http.Client
	token string
}

var tokenRE = regexp.MustCompile(`<meta name="mcpd-token" content="([0-9a-f]+)">`)

// newClient loads the page, which starts a session, and keeps its token.
func (h *harness) newClient() *client {
	h.t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &client{h: h, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	code, body := c.do(http.MethodGet, "/", "", nil)
	m := tokenRE.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		h.t.Fatalf("GET / = %d, no token in:\n%s", code, body)
	}
	c.token = m[1]
	return c
}

// do sends a request with headers hdr and returns the status and body.
func (c *client) do(method, path, body string, hdr map[string]string) (int, string) {
	c.h.t.Helper()
	req, err := http.NewRequest(method, c.h.base+path, strings.NewReader(body))
	if err != nil {
		c.h.t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.h.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// get fetches path and decodes its JSON into v.
func (c *client) get(path string, v any) string {
	c.h.t.Helper()
	code, body := c.do(http.MethodGet, path, "", nil)
	if code != http.StatusOK {
		c.h.t.Fatalf("GET %s = %d %s", path, code, body)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(body), v); err != nil {
			c.h.t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
	return body
}

// post sends a state-changing request with token ("" for none).
func (c *client) post(path, token, body string) (int, string) {
	c.h.t.Helper()
	hdr := map[string]string{"Content-Type": "application/json"}
	if token != "" {
		hdr[tokenHeader] = token
	}
	return c.do(http.MethodPost, path, body, hdr)
}
