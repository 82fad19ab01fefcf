package core

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// NewRemoteAuth is RemoteAuth over m: it finds a server's URL and oauth
// block in sup's specs and runs m's login.
func NewRemoteAuth(m *oauth.Manager, sup *supervisor.Supervisor) RemoteAuth {
	return remoteAuth{m: m, sup: sup}
}

// OAuthAuthorizers is supervisor.Options.NewAuthorizer over m: each remote
// server gets m's Authorizer, unless its config sends its own
// Authorization header.
func OAuthAuthorizers(m *oauth.Manager) func(server string, r *config.Remote) remote.Authorizer {
	return func(server string, r *config.Remote) remote.Authorizer {
		for k := range r.Headers {
			if strings.EqualFold(k, "Authorization") {
				return nil
			}
		}
		return loginAuthorizer{m.For(server, r.URL, OAuthConfig(r))}
	}
}

// OAuthConfig is the oauth package's view of a remote server's "oauth".
func OAuthConfig(r *config.Remote) oauth.Config {
	if r == nil || r.OAuth == nil {
		return oauth.Config{}
	}
	o := r.OAuth
	return oauth.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Scopes: o.Scopes, RedirectPort: o.RedirectPort}
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

// remoteAuth is NewRemoteAuth's RemoteAuth.
type remoteAuth struct {
	m   *oauth.Manager
	sup *supervisor.Supervisor
}

// remote returns server's URL and oauth config; the error wraps
// supervisor.ErrUnknownServer or ErrNotRemote.
func (r remoteAuth) remote(server string) (string, oauth.Config, error) {
	sp, err := r.sup.Spec(server)
	if err != nil {
		return "", oauth.Config{}, fmt.Errorf("%w %q", supervisor.ErrUnknownServer, server)
	}
	if sp.Remote == nil {
		return "", oauth.Config{}, fmt.Errorf("server %q: %w", server, ErrNotRemote)
	}
	return sp.Remote.URL, OAuthConfig(sp.Remote), nil
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
