package oauth

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/oauthtest"
)

func TestLoginThenCalls(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, filepath.Join(t.TempDir(), "state", "mcpd"))
	a := e.m.For("remote", f.MCPURL(), Config{})
	ctx := context.Background()

	// Before a login: no token, the server's 401 means a login is needed.
	_, err := call(ctx, a, f.MCPURL())
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "run: mcpdctl login remote") {
		t.Fatalf("call before login: %v, want login required with the hint", err)
	}
	if _, err := a.Token(ctx); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Token after a 401: %v, want login required", err)
	}
	if st := e.m.Status("remote"); !st.LoginRequired || st.LoggedIn {
		t.Fatalf("Status before login = %+v", st)
	}

	st := e.login(t, f, "remote", Config{})
	if !st.LoggedIn || st.LoginRequired || st.Issuer != f.URL() || st.Resource != f.MCPURL() ||
		!st.HasRefreshToken || st.Expiry.IsZero() || strings.Join(st.Scopes, " ") != "read" {
		t.Fatalf("Status after login = %+v", st)
	}
	q := f.AuthorizeQuery()
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != f.MCPURL() || q.Get("scope") != "read" ||
		!strings.HasPrefix(q.Get("redirect_uri"), "http://127.0.0.1:") {
		t.Fatalf("authorization request %v", q)
	}
	if code, err := call(ctx, a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after login: %d %v", code, err)
	}

	// A second login (another server on the same authorization server)
	// reuses the registration: dynamic registration happens once.
	e.login(t, f, "remote", Config{})
	if n := f.Registrations.Load(); n != 1 {
		t.Fatalf("%d registrations, want 1", n)
	}

	// Another Manager on the same directory (a restarted daemon) has the
	// token and does not register again.
	e2 := newTestManager(t, e.dir)
	a2 := e2.m.For("remote", f.MCPURL(), Config{})
	if code, err := call(ctx, a2, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call from a restarted manager: %d %v", code, err)
	}
	e2.login(t, f, "remote", Config{})
	if n := f.Registrations.Load(); n != 1 {
		t.Fatalf("%d registrations after restart, want 1", n)
	}
	checkFileModes(t, e.dir)
	checkNoSecrets(t, f, e.logs.String()+e2.logs.String())
	checkNoSecrets(t, f, strings.Join([]string{e.m.Status("remote").Reason}, ""))

	if err := e.m.Logout("remote"); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Token(ctx); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Token after logout: %v", err)
	}
	if st := e.m.Status("remote"); st.LoggedIn || st.Issuer != "" {
		t.Fatalf("Status after logout = %+v", st)
	}
}

func checkFileModes(t *testing.T, dir string) {
	t.Helper()
	di, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if di.Mode().Perm() != 0o700 {
		t.Errorf("state directory mode %v, want 0700", di.Mode().Perm())
	}
	fi, err := os.Stat(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", fi.Mode().Perm())
	}
}

// checkNoSecrets fails when text holds any token, code or secret f issued.
func checkNoSecrets(t *testing.T, f *oauthtest.Server, text string) {
	t.Helper()
	for _, s := range f.Secrets() {
		if strings.Contains(text, s) {
			t.Errorf("secret %.6s… appears in:\n%s", s, text)
		}
	}
}

func TestRefreshStorm(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, t.TempDir())
	e.login(t, f, "remote", Config{})
	a := e.m.For("remote", f.MCPURL(), Config{})
	first, err := a.Token(context.Background())
	if err != nil || first == "" {
		t.Fatalf("Token: %q %v", first, err)
	}
	e.clock.advance(time.Hour)

	const apps = 64
	var wg sync.WaitGroup
	start := make(chan struct{})
	toks := make([]string, apps)
	errs := make([]error, apps)
	for i := range apps {
		wg.Go(func() {
			<-start
			toks[i], errs[i] = a.Token(context.Background())
		})
	}
	close(start)
	wg.Wait()
	if n := f.Refreshes.Load(); n != 1 {
		t.Fatalf("%d refresh requests for %d callers, want 1", n, apps)
	}
	for i := range apps {
		if errs[i] != nil || toks[i] == "" || toks[i] == first || toks[i] != toks[0] {
			t.Fatalf("caller %d: %q %v (first %q, caller 0 %q)", i, toks[i], errs[i], first, toks[0])
		}
	}
	// The rotated refresh token was kept: the next refresh works.
	e.clock.advance(time.Hour)
	if code, err := call(context.Background(), a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after the second refresh: %d %v", code, err)
	}
	if n := f.Refreshes.Load(); n != 2 {
		t.Fatalf("%d refreshes, want 2", n)
	}
	for _, form := range f.TokenForms() {
		if form.Get("resource") != f.MCPURL() {
			t.Fatalf("token request without the resource indicator: grant %s", form.Get("grant_type"))
		}
	}
	checkNoSecrets(t, f, e.logs.String())
}

func TestUnauthorizedRefreshesOnce(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, t.TempDir())
	e.login(t, f, "remote", Config{})
	a := e.m.For("remote", f.MCPURL(), Config{})
	ctx := context.Background()

	// The server stops accepting the access token before its expiry: many
	// apps get a 401 with it, one refresh follows, every retry succeeds.
	f.RevokeAccess()
	var wg sync.WaitGroup
	errs := make([]error, 16)
	codes := make([]int, 16)
	for i := range errs {
		wg.Go(func() { codes[i], errs[i] = call(ctx, a, f.MCPURL()) })
	}
	wg.Wait()
	for i := range errs {
		if errs[i] != nil || codes[i] != http.StatusOK {
			t.Fatalf("call %d: %d %v", i, codes[i], errs[i])
		}
	}
	if n := f.Refreshes.Load(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	// A 401 for the token a 401 just refreshed to: the refresh did not
	// help, a login is required.
	f.RevokeAccess()
	if _, err := call(ctx, a, f.MCPURL()); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("401 right after a 401 refresh: %v, want login required", err)
	}
	if n := f.Refreshes.Load(); n != 1 {
		t.Fatalf("%d refreshes, want 1", n)
	}
	checkNoSecrets(t, f, e.logs.String())

	// Later, a 401 is a new revocation: refresh again.
	e.login(t, f, "remote", Config{})
	if code, err := call(ctx, a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after login: %d %v", code, err)
	}
	f.RevokeAccess()
	e.clock.advance(2 * recheckAfter401)
	if code, err := call(ctx, a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after a later revocation: %d %v", code, err)
	}
}

func TestRevokedRefreshTokenNeedsLogin(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, t.TempDir())
	e.login(t, f, "remote", Config{})
	a := e.m.For("remote", f.MCPURL(), Config{})
	f.RevokeAll()
	e.clock.advance(time.Hour)

	_, err := a.Token(context.Background())
	var lre *LoginRequiredError
	if !errors.Is(err, ErrLoginRequired) || !errors.As(err, &lre) || lre.Server != "remote" ||
		!strings.Contains(err.Error(), "run: mcpdctl login remote") {
		t.Fatalf("Token with a revoked refresh token: %v", err)
	}
	st := e.m.Status("remote")
	if !st.LoginRequired || st.LoggedIn || st.Reason != "refresh refused" {
		t.Fatalf("Status = %+v", st)
	}
	// No more requests to the authorization server until a login.
	before := f.Refreshes.Load()
	if _, err := call(context.Background(), a, f.MCPURL()); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("call: %v", err)
	}
	if f.Refreshes.Load() != before {
		t.Fatal("refresh retried after a refusal")
	}
	checkNoSecrets(t, f, e.logs.String()+err.Error())

	e.login(t, f, "remote", Config{})
	if code, err := call(context.Background(), a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after a new login: %d %v", code, err)
	}
}

func TestRedirectChecks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, mode := range []string{"wrong", "omit"} {
		t.Run("iss "+mode, func(t *testing.T) {
			f := oauthtest.New(t, nil)
			f.Set(func(s *oauthtest.Settings) { s.IssMode = mode })
			e := newTestManager(t, t.TempDir())
			flow, err := e.m.Login(ctx, "remote", f.MCPURL(), Config{}, LoginOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if code := browser(t, flow.URL); code != http.StatusBadRequest {
				t.Errorf("redirect answered %d, want 400", code)
			}
			if _, err := flow.Wait(ctx); err == nil || !strings.Contains(err.Error(), "RFC 9207") {
				t.Fatalf("Wait: %v, want an iss error", err)
			}
			if f.Exchanges.Load() != 0 {
				t.Fatal("code exchanged despite the iss check")
			}
			if st := e.m.Status("remote"); st.LoggedIn || st.LoginInProgress {
				t.Fatalf("Status = %+v", st)
			}
		})
	}
	t.Run("state", func(t *testing.T) {
		f := oauthtest.New(t, nil)
		e := newTestManager(t, t.TempDir())
		flow, err := e.m.Login(ctx, "remote", f.MCPURL(), Config{}, LoginOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer flow.Close()
		forged := flow.RedirectURI + "?code=forged&state=other&iss=" + f.URL()
		if code := browser(t, forged); code != http.StatusBadRequest {
			t.Fatalf("forged redirect answered %d, want 400", code)
		}
		if !e.m.Status("remote").LoginInProgress {
			t.Fatal("a forged redirect ended the login")
		}
		if code := browser(t, flow.URL); code != http.StatusOK {
			t.Fatalf("real redirect answered %d", code)
		}
		if _, err := flow.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	})
}

func TestInsufficientScopeStepUp(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, t.TempDir())
	e.login(t, f, "remote", Config{})
	a := e.m.For("remote", f.MCPURL(), Config{})
	f.Set(func(s *oauthtest.Settings) { s.NeedScope = "write" })
	ctx := context.Background()
	code, err := call(ctx, a, f.MCPURL())
	if code != http.StatusForbidden || !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "write") {
		t.Fatalf("call needing a wider scope: %d %v", code, err)
	}
	st := e.e2eLogin(t, f)
	if got := strings.Join(st.Scopes, " "); got != "write read" {
		t.Fatalf("scopes after step-up %q, want the union \"write read\"", got)
	}
	if code, err := call(ctx, a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after step-up: %d %v", code, err)
	}
}

// e2eLogin is login for the server "remote".
func (e *testEnv) e2eLogin(t *testing.T, f *oauthtest.Server) Status {
	return e.login(t, f, "remote", Config{})
}

func TestLoginErrors(t *testing.T) {
	ctx := context.Background()
	e := newTestManager(t, t.TempDir())
	if _, err := e.m.Login(ctx, "x", "ftp://example.com/mcp", Config{}, LoginOptions{}); err == nil {
		t.Fatal("non-http URL accepted")
	}
	// A server that publishes no authorization metadata of any kind.
	srv := httptestPlain(t)
	if _, err := e.m.Login(ctx, "x", srv+"/mcp", Config{}, LoginOptions{}); err == nil {
		t.Fatal("login against a server without OAuth succeeded")
	} else {
		t.Logf("error: %v", err)
	}
	if st := e.m.Status("x"); st.LoginInProgress {
		t.Fatal("failed login left in progress")
	}
}

// TestForgottenClientRegistersAgain drops a registration the
// authorization server answers invalid_client to, by its OAuth error
// code: the login after the refused one registers a new client.
func TestForgottenClientRegistersAgain(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, t.TempDir())
	e.login(t, f, "x", Config{})
	f.ForgetClients()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	flow, err := e.m.Login(ctx, "x", f.MCPURL(), Config{}, LoginOptions{})
	if err != nil {
		t.Fatalf("Login: %v", err)
	}
	_ = browser(t, flow.URL)
	if _, err := flow.Wait(ctx); !errors.Is(err, errRefused) {
		t.Fatalf("login with a forgotten client: %v, want a refusal", err)
	}
	if n := f.Registrations.Load(); n != 1 {
		t.Fatalf("%d registrations before the refusal was seen, want 1", n)
	}
	e.login(t, f, "x", Config{})
	if n := f.Registrations.Load(); n != 2 {
		t.Fatalf("%d registrations, want the forgotten client replaced", n)
	}
}

func TestCorruptFileIsAnErrorNotALoss(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, FileName)
	if err := os.WriteFile(path, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	e := newTestManager(t, dir)
	if !strings.Contains(e.logs.String(), "not valid") {
		t.Fatalf("no warning logged: %s", e.logs.String())
	}
	b, _ := os.ReadFile(path)
	if string(b) != "{not json" {
		t.Fatal("unreadable file overwritten at start")
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
}

// A credentials write that is slow (here: held) holds up only the caller
// that changed them: Status answers from memory meanwhile, and the file has
// the change once that caller returns.
func TestSlowCredentialsWriteHoldsUpNoReader(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, filepath.Join(t.TempDir(), "state", "mcpd"))
	e.login(t, f, "remote", Config{})

	e.m.writeMu.Lock()
	done := make(chan error, 1)
	go func() { done <- e.m.Logout("remote") }()
	deadline := time.Now().Add(20 * time.Second)
	for st := e.m.Status("remote"); st.Reason != "logged out"; st = e.m.Status("remote") {
		if time.Now().After(deadline) {
			e.m.writeMu.Unlock()
			t.Fatalf("Status during the write = %+v, want logged out", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-done:
		t.Fatalf("Logout returned (%v) before its write", err)
	default:
	}
	e.m.writeMu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	d, err := loadStore(e.m.Path())
	if err != nil || d.Servers["remote"] != nil || len(d.Tokens) != 0 {
		t.Fatalf("file after Logout: servers %v tokens %d, %v; want neither", d.Servers, len(d.Tokens), err)
	}
}

// Writes that come out of order leave the newest content in the file.
func TestCredentialsWritesKeepTheNewest(t *testing.T) {
	e := newTestManager(t, t.TempDir())
	e.m.mu.Lock()
	e.m.data.Servers["old"] = &binding{ServerURL: "https://old.example/mcp"}
	older := e.m.snapshotLocked()
	e.m.data.Servers["new"] = &binding{ServerURL: "https://new.example/mcp"}
	newer := e.m.snapshotLocked()
	e.m.mu.Unlock()
	e.m.write(newer)
	e.m.write(older)
	d, err := loadStore(e.m.Path())
	if err != nil || d.Servers["new"] == nil || d.Servers["old"] == nil {
		t.Fatalf("file servers %v, %v; want the newer content (old and new)", d.Servers, err)
	}
}
