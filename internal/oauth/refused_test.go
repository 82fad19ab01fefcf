package oauth

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/oauthtest"
)

// handshake connects to f's MCP endpoint over the remote transport, with
// a as its Authorizer, and returns the handshake's error.
func handshake(t *testing.T, f *oauthtest.Server, a Authorizer) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := remote.Dial(ctx, remote.Options{Name: "remote", URL: f.MCPURL(), Authorizer: a})
	if err != nil {
		return err
	}
	sess := session.New(conn, session.Options{Server: "remote", Protocol: session.ProtocolLegacy})
	defer func() {
		_ = conn.Stop()
		sess.Wait()
	}()
	_, err = sess.Handshake(ctx)
	return err
}

// A 401 to the request retried with a refreshed token ends it with "login
// required", and the OAuth manager says so too (the refused hook): the
// server's state and mcpdctl status agree, and no more refreshes follow
// until a login.
func TestRetried401LoginStateAgrees(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, t.TempDir())
	e.login(t, f, "remote", Config{})
	a := e.m.For("remote", f.MCPURL(), Config{})
	f.Set(func(s *oauthtest.Settings) { s.RefuseTokens = true })

	if err := handshake(t, f, a); !errors.Is(err, remote.ErrLoginRequired) {
		t.Fatalf("handshake with every token refused: %v, want login required", err)
	}
	st := e.m.Status("remote")
	if !st.LoginRequired || st.LoggedIn {
		t.Fatalf("manager status after the retry's 401: %+v; want login required, not logged in", st)
	}
	refreshes := f.Refreshes.Load()
	if _, err := a.Token(context.Background()); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("Token after the refusal: %v, want login required", err)
	}
	if err := handshake(t, f, a); !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("second handshake: %v, want login required", err)
	}
	if n := f.Refreshes.Load(); n != refreshes {
		t.Fatalf("%d more refreshes after the refusal, want none before a login", n-refreshes)
	}

	// A login clears it for both.
	f.Set(func(s *oauthtest.Settings) { s.RefuseTokens = false })
	e.login(t, f, "remote", Config{})
	if code, err := call(context.Background(), a, f.MCPURL()); err != nil || code != http.StatusOK {
		t.Fatalf("call after a login: %d %v", code, err)
	}
	if st := e.m.Status("remote"); st.LoginRequired || !st.LoggedIn {
		t.Fatalf("status after a login: %+v", st)
	}
}

// Callers that met a refresh in flight take its outcome, even a failure:
// one refresh request for all of them, not one more per caller.
func TestRefreshMetByAnotherIsReused(t *testing.T) {
	f := oauthtest.New(t, nil)
	e := newTestManager(t, t.TempDir())
	e.login(t, f, "remote", Config{})
	a := e.m.For("remote", f.MCPURL(), Config{})
	e.clock.advance(time.Hour)
	hold := make(chan struct{})
	f.Set(func(s *oauthtest.Settings) { s.RefreshUnavailable, s.HoldRefresh = true, hold })

	// The first caller's refresh is held at the token endpoint until every
	// other caller waits for it; then it fails.
	const callers = 16
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Go(func() { _, errs[i] = a.Token(context.Background()) })
	}
	for waiting := 0; waiting < callers-1; {
		e.m.mu.Lock()
		waiting = 0
		for _, fl := range e.m.refreshing {
			waiting = fl.waiters
		}
		e.m.mu.Unlock()
		runtime.Gosched()
	}
	close(hold)
	wg.Wait()
	for i, err := range errs {
		if err == nil || errors.Is(err, ErrLoginRequired) {
			t.Errorf("caller %d: %v, want the refresh's failure (not login required)", i, err)
		}
	}
	if n := f.Refreshes.Load(); n != 1 {
		t.Errorf("%d refresh requests for %d callers meeting one refresh, want 1", n, callers)
	}
	// A later caller tries again, and the refresh works.
	f.Set(func(s *oauthtest.Settings) { s.RefreshUnavailable, s.HoldRefresh = false, nil })
	if tok, err := a.Token(context.Background()); err != nil || tok == "" {
		t.Fatalf("Token once the token endpoint is back: %q %v", tok, err)
	}
	if n := f.Refreshes.Load(); n != 2 {
		t.Errorf("%d refreshes, want 2", n)
	}
}
