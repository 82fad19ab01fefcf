package main

import (
	"net/http"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/secrets"
)

// newOAuthManager makes the daemon's OAuth manager, keeping its
// credentials as one item of st's Secret Service when it has one, else in
// stateDir/oauth.json (an oauth.json found beside a Secret Service is
// moved into it). core.NewRemoteAuth and core.OAuthAuthorizers put it to use.
func newOAuthManager(stateDir string, st *secrets.Store, log *zap.Logger) *oauth.Manager {
	store := oauth.KeyringStore(st, filepath.Join(stateDir, oauth.FileName), log)
	return oauth.NewManagerWith(store, log, &http.Client{Timeout: 30 * time.Second})
}
