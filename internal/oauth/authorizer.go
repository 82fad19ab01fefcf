package oauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"go.uber.org/zap"
)

// Authorizer gives a remote server's HTTP transport its bearer token.
type Authorizer interface {
	// Token returns the access token to send as "Authorization: Bearer",
	// refreshing it first when it is about to expire. It returns "" and
	// nil when no login is known to be needed (yet), and an error wrapping
	// ErrLoginRequired once one is.
	Token(ctx context.Context) (string, error)
	// OnUnauthorized is told of a 401 or 403 answer (resp.Request is the
	// request that got it). It returns nil when a retry may succeed (a
	// refresh worked, or the token changed meanwhile), an error wrapping
	// ErrLoginRequired with the hint "run: mcpdctl login NAME" when only a
	// login can help, or another error for a plain 403.
	OnUnauthorized(ctx context.Context, resp *http.Response) error
	// Refused is told of a 401 to a request retried with the token Token
	// gave after OnUnauthorized returned nil: the token cannot be fixed
	// by a refresh, and the server now needs a login, as Status says. It
	// returns the error wrapping ErrLoginRequired that ends the request.
	Refused(ctx context.Context, resp *http.Response) error
}

// refreshFlight is the one refresh in flight of a token: the callers that
// meet it wait for it and take its outcome, a failure too, rather than
// refreshing that token once more each (single-flight on the token's
// generation: the next refresh is of the token it made, or of the same one
// by a caller that came after the failure).
type refreshFlight struct {
	done    chan struct{} // closed once err is set
	err     error         // the refresh's outcome for the callers that waited
	waiters int           // callers waiting for it (tests); guarded by Manager.mu
}

// serverAuth is the Authorizer of one configured server.
type serverAuth struct {
	m         *Manager
	server    string
	serverURL string
	cfg       Config
}

// Token implements Authorizer.
func (a *serverAuth) Token(ctx context.Context) (string, error) {
	m := a.m
	if !m.load(false) {
		// Not readable yet (a locked keyring): a token got meanwhile is
		// used; else say why, without asking for a login.
		m.mu.Lock()
		_, t := m.boundToken(a.server, a.serverURL, a.cfg.ClientID)
		err := m.loadErr
		m.mu.Unlock()
		if t == nil {
			return "", fmt.Errorf("server %q: %w", a.server, err)
		}
	}
	for {
		m.mu.Lock()
		st := m.state(a.server)
		if st.needLogin != "" {
			m.mu.Unlock()
			return "", loginRequired(a.server, st.needLogin)
		}
		_, t := m.boundToken(a.server, a.serverURL, a.cfg.ClientID)
		if t == nil {
			m.mu.Unlock()
			return "", nil
		}
		now := m.now()
		if at := refreshAt(t); at.IsZero() || now.Before(at) {
			tok := t.AccessToken
			m.mu.Unlock()
			return tok, nil
		}
		if t.RefreshToken == "" {
			if now.Before(t.Expiry) {
				tok := t.AccessToken // about to expire, nothing to refresh with
				m.mu.Unlock()
				return tok, nil
			}
			st.needLogin = "token expired"
			m.mu.Unlock()
			return "", loginRequired(a.server, "token expired")
		}
		if f, ok := m.refreshing[t.Key]; ok {
			f.waiters++
			m.mu.Unlock()
			select {
			case <-f.done:
				if f.err != nil {
					return "", f.err // reused, not repeated
				}
				continue
			case <-ctx.Done():
				return "", fmt.Errorf("server %q: waiting for the token refresh: %w", a.server, ctx.Err())
			}
		}
		if err := a.refreshLocked(ctx, t, ""); err != nil {
			return "", err
		}
	}
}

// OnUnauthorized implements Authorizer.
func (a *serverAuth) OnUnauthorized(ctx context.Context, resp *http.Response) error {
	if resp == nil {
		return errors.New("oauth: OnUnauthorized without a response")
	}
	ch := parseChallenge(resp.Header.Values("WWW-Authenticate"))
	m := a.m
	m.mu.Lock()
	st := m.state(a.server)
	if ch != nil {
		st.challenge = ch
	}
	if resp.StatusCode == http.StatusForbidden {
		defer m.mu.Unlock()
		if ch == nil || ch.errorCode != "insufficient_scope" {
			return fmt.Errorf("server %q refused the request (403 Forbidden)", a.server)
		}
		st.wantScopes = union(st.wantScopes, ch.scopes)
		st.needLogin = "needs scope " + strings.Join(ch.scopes, " ")
		m.log.Info("oauth scope step-up needed", zap.String("server", a.server), zap.Strings("scopes", ch.scopes))
		return loginRequired(a.server, st.needLogin)
	}
	used := bearerOf(resp.Request)
	_, t := m.boundToken(a.server, a.serverURL, a.cfg.ClientID)
	switch {
	case t == nil:
		st.needLogin = "no token"
	case used != "" && used != t.AccessToken:
		m.mu.Unlock()
		return nil // refreshed meanwhile: retry with the new token
	case t.RefreshToken == "" ||
		(st.refreshedFor401 == t.AccessToken && m.now().Sub(st.refreshedAt) < recheckAfter401):
		st.needLogin = "token refused"
	default:
		if f, ok := m.refreshing[t.Key]; ok {
			f.waiters++
			m.mu.Unlock()
			select {
			case <-f.done:
				return f.err // nil: retry with the token it made
			case <-ctx.Done():
				return fmt.Errorf("server %q: waiting for the token refresh: %w", a.server, ctx.Err())
			}
		}
		return a.refreshLocked(ctx, t, t.AccessToken)
	}
	reason := st.needLogin
	m.mu.Unlock()
	m.log.Info("oauth login required", zap.String("server", a.server), zap.String("reason", reason))
	return loginRequired(a.server, reason)
}

// Refused implements Authorizer: the server refused the token a refresh
// (or another caller's) just gave, so only a login can help, and this
// server's login state says so, as the supervisor's does.
func (a *serverAuth) Refused(_ context.Context, resp *http.Response) error {
	m := a.m
	reason := "token refused after a refresh"
	m.mu.Lock()
	st := m.state(a.server)
	if resp != nil {
		if ch := parseChallenge(resp.Header.Values("WWW-Authenticate")); ch != nil {
			st.challenge = ch
		}
	}
	if st.needLogin == "" {
		st.needLogin = reason
	}
	reason = st.needLogin
	m.mu.Unlock()
	m.log.Info("oauth login required", zap.String("server", a.server), zap.String("reason", reason))
	return loginRequired(a.server, reason)
}

// refreshLocked refreshes t with m.mu held, releasing it for the request
// and returning with it released; concurrent callers wait for this one.
// refused401 is the access token a 401 refused ("" for a refresh before
// expiry).
func (a *serverAuth) refreshLocked(ctx context.Context, t *tokenRecord, refused401 string) error {
	m := a.m
	f := &refreshFlight{done: make(chan struct{})}
	m.refreshing[t.Key] = f
	old := *t
	secret := m.clientSecretLocked(t.Key, a.cfg)
	m.mu.Unlock()

	rctx, cancel := detached(ctx)
	fresh, err := m.refresh(rctx, &old, secret)
	cancel()

	m.mu.Lock()
	delete(m.refreshing, t.Key)
	snap, err := a.commitRefreshLocked(t.Key, fresh, err, refused401)
	f.err = err
	close(f.done)
	m.mu.Unlock()
	m.write(snap) // the waiters go on meanwhile: they need only the memory
	return err
}

// commitRefreshLocked keeps the outcome of refreshing the token of k: the
// fresh token, or a refused refresh's need for a login. It returns what to
// write to the credentials file (nil: nothing changed) and the caller's
// error. m.mu must be held.
func (a *serverAuth) commitRefreshLocked(k tokenKey, fresh *tokenRecord, err error, refused401 string) (*snapshot, error) {
	m := a.m
	if err != nil {
		if !errors.Is(err, errRefused) {
			m.log.Warn("oauth refresh failed", zap.String("server", a.server), zap.Error(err))
			return nil, fmt.Errorf("server %q: %w", a.server, err)
		}
		m.data.dropToken(k)
		m.markKeyLocked(k, "refresh refused")
		m.log.Info("oauth refresh refused: login required", zap.String("server", a.server), zap.Error(err))
		return m.snapshotLocked(), loginRequired(a.server, "refresh refused")
	}
	m.data.putToken(fresh)
	if refused401 != "" {
		st := m.state(a.server)
		st.refreshedFor401, st.refreshedAt = fresh.AccessToken, m.now()
	}
	m.log.Debug("oauth token refreshed", zap.String("server", a.server), zap.Time("expiry", fresh.Expiry))
	return m.snapshotLocked(), nil
}

// markKeyLocked marks every server bound to k as needing a login.
func (m *Manager) markKeyLocked(k tokenKey, reason string) {
	for name, b := range m.data.Servers {
		if b.Key == k {
			m.state(name).needLogin = reason
		}
	}
}

// clientSecretLocked is the secret of k's client: the registered one, else
// the configured one. m.mu must be held.
func (m *Manager) clientSecretLocked(k tokenKey, cfg Config) string {
	if c := m.data.client(k.Issuer); c != nil && c.ClientID == k.ClientID {
		return c.ClientSecret
	}
	if cfg.ClientID == k.ClientID {
		return cfg.ClientSecret
	}
	return ""
}

// bearerOf is the bearer token req carried ("" when none).
func bearerOf(req *http.Request) string {
	if req == nil {
		return ""
	}
	h := req.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}
