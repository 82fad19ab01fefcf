package main

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// remoteAuth is api.RemoteAuth over the daemon's oauth.Manager: it finds a
// server's URL and oauth block in the config and runs the Manager's login.
type remoteAuth struct {
	m   *oauth.Manager
	sup *supervisor.Supervisor
}

var _ api.RemoteAuth = remoteAuth{}

// newRemoteAuth makes the daemon's OAuth manager, keeping its credentials
// under $XDG_STATE_HOME/mcpd. Remote transports get their Authorizer from
// its For.
func newRemoteAuth(sup *supervisor.Supervisor, log *zap.Logger) remoteAuth {
	hc := &http.Client{Timeout: 30 * time.Second}
	return remoteAuth{m: oauth.NewManager(paths.StateDir(), log, hc), sup: sup}
}

// remote returns server's URL and oauth config; the error wraps
// supervisor.ErrUnknownServer or api.ErrNotRemote.
func (r remoteAuth) remote(server string) (string, oauth.Config, error) {
	if !slices.Contains(r.sup.Names(), server) {
		return "", oauth.Config{}, fmt.Errorf("%w %q", supervisor.ErrUnknownServer, server)
	}
	// Every configured server is a stdio child until url servers exist.
	return "", oauth.Config{}, fmt.Errorf("server %q: %w", server, api.ErrNotRemote)
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
