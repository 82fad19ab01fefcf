package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/secrets"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// remoteAuth is api.RemoteAuth over the daemon's oauth.Manager: it finds a
// server's URL and oauth block in the supervisor's specs and runs the
// Manager's login.
type remoteAuth struct {
	m   *oauth.Manager
	sup *supervisor.Supervisor
}

var _ api.RemoteAuth = remoteAuth{}

// newOAuthManager makes the daemon's OAuth manager, keeping its
// credentials as one item of st's Secret Service when it has one, else in
// stateDir/oauth.json (an oauth.json found beside a Secret Service is
// moved into it).
func newOAuthManager(stateDir string, st *secrets.Store, log *zap.Logger) *oauth.Manager {
	store := oauth.KeyringStore(st, filepath.Join(stateDir, oauth.FileName), log)
	return oauth.NewManagerWith(store, log, &http.Client{Timeout: 30 * time.Second})
}

// oauthConfig is the oauth package's view of a remote server's "oauth".
func oauthConfig(r *config.Remote) oauth.Config {
	if r == nil || r.OAuth == nil {
		return oauth.Config{}
	}
	o := r.OAuth
	return oauth.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, RedirectPort: o.RedirectPort}
}

// newAuthorizer gives each remote server the Manager's Authorizer, unless
// its config sends its own Authorization header.
func newAuthorizer(m *oauth.Manager) func(server string, r *config.Remote) remote.Authorizer {
	return func(server string, r *config.Remote) remote.Authorizer {
		for k := range r.Headers {
			if strings.EqualFold(k, "Authorization") {
				return nil
			}
		}
		return loginAuthorizer{m.For(server, r.URL, oauthConfig(r))}
	}
}

// loginAuthorizer makes the oauth package's "login required" the remote
// transport's, so that the server shows "login required".
type loginAuthorizer struct{ a oauth.Authorizer }

func (l loginAuthorizer) Token(ctx context.Context) (string, error) {
	t, err := l.a.Token(ctx)
	return t, asLoginRequired(err)
}

func (l loginAuthorizer) OnUnauthorized(ctx context.Context, resp *http.Response) error {
	return asLoginRequired(l.a.OnUnauthorized(ctx, resp))
}

// Refused tells the manager of a 401 to a retried request (remote.Refuser),
// so that its login state and the server's agree.
func (l loginAuthorizer) Refused(ctx context.Context, resp *http.Response) error {
	return asLoginRequired(l.a.Refused(ctx, resp))
}

var _ remote.Refuser = loginAuthorizer{}

func asLoginRequired(err error) error {
	if errors.Is(err, oauth.ErrLoginRequired) && !errors.Is(err, remote.ErrLoginRequired) {
		return fmt.Errorf("%w: %w", remote.ErrLoginRequired, err)
	}
	return err
}

// remote returns server's URL and oauth config; the error wraps
// supervisor.ErrUnknownServer or api.ErrNotRemote.
func (r remoteAuth) remote(server string) (string, oauth.Config, error) {
	sp, err := r.sup.Spec(server)
	if err != nil {
		return "", oauth.Config{}, fmt.Errorf("%w %q", supervisor.ErrUnknownServer, server)
	}
	if sp.Remote == nil {
		return "", oauth.Config{}, fmt.Errorf("server %q: %w", server, api.ErrNotRemote)
	}
	return sp.Remote.URL, oauthConfig(sp.Remote), nil
}

// LoggedIn restarts server after its login, leaving "login required".
func (r remoteAuth) LoggedIn(ctx context.Context, server string) {
	_, _ = r.sup.Restart(ctx, server)
}

func (r remoteAuth) Login(ctx context.Context, server string, opts oauth.LoginOptions) (*oauth.LoginFlow, error) {
	u, cfg, err := r.remote(server)
	if err != nil {
		return nil, err
	}
	return r.m.Login(ctx, server, u, cfg, opts)
}

func (r remoteAuth) Logout(server string) error {
	if _, _, err := r.remote(server); err != nil {
		return err
	}
	return r.m.Logout(server)
}

func (r remoteAuth) Status(server string) (oauth.Status, bool) {
	if _, _, err := r.remote(server); err != nil {
		return oauth.Status{}, false
	}
	return r.m.Status(server), true
}
