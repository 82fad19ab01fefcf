package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/testing/oauthtest"
)

// corp is "corp", an autostarted remote server behind a fake OAuth
// authorization server, whose resource is the Go SDK's Streamable HTTP
// handler with one tool, echo.
func corp(t *testing.T) (*oauthtest.Server, config.Server) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "oauth-protected", Version: "1.0.0"}, nil)
	type echoIn struct {
		Message string `json:"message"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "echo the message back"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Message}}}, nil, nil
		})
	as := oauthtest.New(t, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	return as, config.Server{Name: "corp", Remote: &config.Remote{URL: as.MCPURL(), Type: config.TypeHTTP}, Autostart: true, RequestTimeout: 30 * time.Second}
}

// corpView is the login part of corp's entry in the snapshot.
type corpView struct {
	State           string `json:"state"`
	Reason          string `json:"reason"`
	LoginRequired   bool   `json:"loginRequired"`
	LoggedIn        bool   `json:"loggedIn"`
	CanLogin        bool   `json:"canLogin"`
	LoginInProgress bool   `json:"loginInProgress"`
	LoginError      string `json:"loginError"`
	OAuthIssuer     string `json:"oauthIssuer"`
}

// view is corp's entry in the snapshot, and the snapshot's text.
func (c *client) view(name string) (corpView, string) {
	c.h.t.Helper()
	var snap struct {
		Servers []struct {
			Name string `json:"name"`
			corpView
		} `json:"servers"`
	}
	body := c.get("/dashboard/api/status", &snap)
	for _, s := range snap.Servers {
		if s.Name == name {
			return s.corpView, body
		}
	}
	c.h.t.Fatalf("no %s in the snapshot %s", name, body)
	return corpView{}, ""
}

// follow opens the authorization URL as a consenting user's browser: the
// authorization server redirects straight to mcpd's loopback listener,
// whose answer (status and text) it returns.
func follow(t *testing.T, u string) (int, string) {
	t.Helper()
	browser := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	resp, err := browser.Get(u)
	if err != nil {
		t.Fatalf("open the authorization URL: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestLoginEndpoint: the login POST needs the page's token (without it,
// or with another session's, nothing begins), names a remote server (a
// command server is a clear error), and answers the authorization URL
// only; following it logs the server in, which turns ready; a login that
// fails says why in the snapshot. No token or code shows in any answer
// or log line.
func TestLoginEndpoint(t *testing.T) {
	as, srv := corp(t)
	h := newHarness(t, srv)
	h.waitState("corp", "login required")
	c, other := h.newClient(), h.newClient()
	if v, _ := c.view("corp"); !v.LoginRequired || !v.CanLogin || !strings.Contains(v.Reason, "log in from the server's panel") {
		t.Fatalf("corp before login: %+v, want login required, with a login", v)
	}

	for _, tt := range []struct{ name, token string }{{"none", ""}, {"other session's", other.token}, {"forged", strings.Repeat("0", 64)}} {
		if code, body := c.post("/dashboard/api/servers/corp/login", tt.token, ""); code != http.StatusForbidden || strings.Contains(body, as.URL()) {
			t.Errorf("login with token %s: %d %s, want 403 without a URL", tt.name, code, body)
		}
	}
	if n := as.Registrations.Load(); n != 0 || loginInProgress(h.status("corp")) {
		t.Fatalf("refused logins began one: %d registrations, in progress %v", n, loginInProgress(h.status("corp")))
	}

	code, body := c.post("/dashboard/api/servers/alpha/login", c.token, "")
	var e struct{ Error, Reason string }
	if json.Unmarshal([]byte(body), &e); code != http.StatusConflict || e.Reason != "NOT_REMOTE" || !strings.Contains(e.Error, "not a remote (url) server") {
		t.Errorf("login of a command server = %d %s, want 409 NOT_REMOTE", code, body)
	}
	if code, body := c.post("/dashboard/api/servers/nosuch/login", c.token, ""); code != http.StatusNotFound {
		t.Errorf("login of an unknown server = %d %s, want 404", code, body)
	}

	u := c.login("corp")
	if !strings.HasPrefix(u, as.URL()+"/authorize?") {
		t.Fatalf("authorization URL %q is not the authorization server's", u)
	}
	if v, _ := c.view("corp"); !v.LoginInProgress {
		t.Errorf("corp during the login: %+v, want a login in progress", v)
	}
	if code, text := follow(t, u); code != http.StatusOK || !strings.Contains(text, "logged in to corp") {
		t.Fatalf("the redirect to mcpd = %d %q", code, text)
	}
	h.waitState("corp", "ready")
	v, snap := c.view("corp")
	if v.LoginRequired || !v.LoggedIn || !v.CanLogin || v.LoginInProgress || v.OAuthIssuer != as.URL() {
		t.Errorf("corp after login: %+v, want logged in at %s, with a login again", v, as.URL())
	}
	if code, body := c.post("/dashboard/api/servers/corp/call", c.token, `{"tool":"echo","arguments":{"message":"hi corp"}}`); code != http.StatusOK || !strings.Contains(body, "hi corp") {
		t.Errorf("call after login = %d %s", code, body)
	}
	answers := []string{body, snap, u}

	// Log in again, answered by another issuer: refused, said on the page;
	// the token already held keeps the server ready.
	as.Set(func(s *oauthtest.Settings) { s.IssMode = "wrong" })
	u = c.login("corp")
	if code, _ := follow(t, u); code != http.StatusBadRequest {
		t.Errorf("a wrong iss answered %d, want 400", code)
	}
	deadline := time.Now().Add(20 * time.Second)
	for v, snap = c.view("corp"); v.LoginError == ""; v, snap = c.view("corp") {
		if time.Now().After(deadline) {
			t.Fatalf("no login error in the snapshot: %+v", v)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(v.LoginError, "RFC 9207") || v.State != "ready" {
		t.Errorf("after a refused login: %+v, want the reason, still ready", v)
	}
	answers = append(answers, snap)

	for _, s := range as.Secrets() {
		for _, a := range answers {
			if strings.Contains(a, s) {
				t.Errorf("an answer carries %s", s)
			}
		}
		for _, l := range h.logs.All() {
			if line := fmt.Sprint(l.Message, l.ContextMap()); strings.Contains(line, s) {
				t.Errorf("log line carries %s: %s", s, line)
			}
		}
	}
}

// login begins server's login from the page and returns the URL, the
// answer's only field.
func (c *client) login(server string) string {
	c.h.t.Helper()
	code, body := c.post("/dashboard/api/servers/"+server+"/login", c.token, "")
	var out map[string]string
	if err := json.Unmarshal([]byte(body), &out); code != http.StatusOK || err != nil || len(out) != 1 || out["authorizationUrl"] == "" {
		c.h.t.Fatalf("login of %s = %d %s, want the authorization URL alone", server, code, body)
	}
	return out["authorizationUrl"]
}

// TestBrowserLogin: in headless Chromium, the Log in button of a remote
// server that needs a login opens the authorization server in a new
// window, cut from the page; the authorization server redirects it to
// mcpd, and the page shows the server ready, without a reload.
func TestBrowserLogin(t *testing.T) {
	as, srv := corp(t)
	h := newHarness(t, srv)
	h.waitState("corp", "login required")
	b := newBrowser(t, h)
	b.waitJS("corp needing a login", row("corp")+"?.dataset.state == 'login required'")
	b.do("window.__loaded = 'once'") // gone if the page reloads
	b.click(`#servers tr[data-server="corp"] td`)
	b.waitJS("corp's panel with its login", `document.querySelector('#detail .head h2')?.textContent == 'corp' && document.querySelector('#detail button.login')?.textContent == 'Log in'`)

	opened := chromedp.WaitNewTarget(b.ctx, func(i *target.Info) bool { return i.Type == "page" })
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	// A mouse click, as a user's: the page opens its window at the click.
	if _, err := chromedp.Run(ctx, chromedp.Click(`#detail button.login`)); err != nil {
		t.Fatalf("click Log in: %v", err)
	}
	var id target.ID
	select {
	case id = <-opened:
	case <-ctx.Done():
		t.Fatalf("no window opened\npage:\n%s", b.page())
	}
	win, closeWin := chromedp.NewContext(b.ctx, chromedp.WithTargetID(id))
	defer closeWin()
	// The first Run attaches to the window, for the life of its context:
	// no timeout on it.
	if _, err := chromedp.Run(win, chromedp.Evaluate[bool]("true")); err != nil {
		t.Fatalf("attach to the new window: %v", err)
	}
	tab := &browser{t: t, ctx: win}
	tab.waitJS("mcpd's answer to the redirect in the new window", `document.body?.innerText.includes('logged in to corp')`)
	if evalT[bool](tab, "window.opener !== null") {
		t.Error("the authorization window can reach the dashboard (window.opener)")
	}
	if q := as.AuthorizeQuery(); q.Get("code_challenge_method") != "S256" || as.Exchanges.Load() != 1 {
		t.Errorf("the window did not go through the authorization server: %v, %d exchanges", q, as.Exchanges.Load())
	}

	b.waitJS("corp ready", row("corp")+"?.dataset.state == 'ready'")
	b.waitJS("log in again offered", `document.querySelector('#detail button.login')?.textContent == 'Log in again' && document.querySelector('#detail .oauth').textContent.includes('logged in at `+as.URL()+`')`)
	if evalT[string](b, "window.__loaded || ''") != "once" {
		t.Fatal("the page reloaded")
	}
	for _, s := range as.Secrets() {
		if strings.Contains(evalT[string](b, "document.documentElement.outerHTML"), s) {
			t.Errorf("the page carries %s", s)
		}
	}
}

// loginInProgress reports whether s's OAuth login is in progress.
func loginInProgress(s service.ServerStatus) bool { return s.OAuth != nil && s.OAuth.LoginInProgress }
