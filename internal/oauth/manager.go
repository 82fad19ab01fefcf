package oauth

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"go.uber.org/zap"
)

// Config is a remote server's oauth block in mcpd's config. Every field is
// optional: without a client id the client registers itself dynamically.
type Config struct {
	ClientID     string
	ClientSecret string
	// Scopes are requested on top of those the server asks for.
	Scopes []string
	// RedirectPort fixes the loopback redirect's port (for an authorization
	// server that matches redirect URIs exactly); 0 picks a free one.
	RedirectPort int
}

// Status is what mcpd says about a server's login. It never holds token or
// secret text.
type Status struct {
	Server   string
	LoggedIn bool
	// LoginRequired is set when a login is needed before calls can
	// succeed; Reason says why.
	LoginRequired bool
	Reason        string
	// LoginInProgress is set while a login's redirect is being awaited.
	LoginInProgress bool
	Issuer          string
	Resource        string
	ClientID        string
	Scopes          []string
	// Expiry is when the access token expires (zero: unknown).
	Expiry          time.Time
	HasRefreshToken bool
}

// Manager holds the OAuth state of every remote server: client
// registrations, tokens, logins in progress. Its methods are safe for
// concurrent use.
type Manager struct {
	path string
	log  *zap.Logger
	hc   *http.Client
	now  func() time.Time

	mu         sync.Mutex // guards data, servers, refreshing, logins and taken; held for no I/O
	data       *storeData
	servers    map[string]*serverState     // by server name
	refreshing map[tokenKey]*refreshFlight // refreshes in flight, one per token
	logins     map[string]*LoginFlow       // logins in progress, by server name
	taken      uint64                      // snapshots taken of data: the newest's seq

	// writeMu serialises writes of path and guards written. It is taken
	// with mu released (never the other way round), so a slow disk holds
	// up only the callers that changed the credentials.
	writeMu sync.Mutex
	written uint64 // seq of the newest snapshot written (or that failed)
}

// snapshot is the credentials file's content after one change of the data.
type snapshot struct {
	seq  uint64
	data []byte
	err  error // encoding failed
}

// serverState is what the Manager knows of a server between logins.
type serverState struct {
	// needLogin is the reason a login is required ("" when none is known).
	needLogin string
	// challenge is the last WWW-Authenticate challenge the server sent.
	challenge *challenge
	// wantScopes are scopes a 403 insufficient_scope asked for.
	wantScopes []string
	// refreshedFor401 is the access token a 401 made us refresh to, at
	// refreshedAt; a 401 for it soon after means a login is required.
	refreshedFor401 string
	refreshedAt     time.Time
}

// recheckAfter401 is how long after a refresh a 401 refused a 401 for the
// new token means the refresh did not help (a login is required) rather
// than that the new token has since been revoked too (refresh again).
const recheckAfter401 = time.Minute

// refreshSkew is how long before its expiry a token is refreshed.
const refreshSkew = time.Minute

// NewManager returns a Manager keeping its credentials in
// stateDir/oauth.json. hc makes every request to authorization and
// resource servers (nil: http.DefaultClient). A credentials file that
// cannot be read is logged and left as it is; a login writes a new one.
func NewManager(stateDir string, log *zap.Logger, hc *http.Client) *Manager {
	if log == nil {
		log = zap.NewNop()
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	path := filepath.Join(stateDir, FileName)
	data, err := loadStore(path)
	if err != nil {
		log.Warn("oauth credentials not loaded", zap.Error(err))
	}
	return &Manager{
		path:       path,
		log:        log,
		hc:         hc,
		now:        time.Now,
		data:       data,
		servers:    map[string]*serverState{},
		refreshing: map[tokenKey]*refreshFlight{},
		logins:     map[string]*LoginFlow{},
	}
}

// Path is the credentials file.
func (m *Manager) Path() string { return m.path }

// For returns the Authorizer of server, reached at serverURL.
func (m *Manager) For(server, serverURL string, cfg Config) Authorizer {
	return &serverAuth{m: m, server: server, serverURL: serverURL, cfg: cfg}
}

// state returns server's state, creating it. m.mu must be held.
func (m *Manager) state(server string) *serverState {
	st := m.servers[server]
	if st == nil {
		st = &serverState{}
		m.servers[server] = st
	}
	return st
}

// boundToken returns server's binding and token when the binding is for
// serverURL and clientID ("" matches any). m.mu must be held.
func (m *Manager) boundToken(server, serverURL, clientID string) (*binding, *tokenRecord) {
	b := m.data.Servers[server]
	if b == nil || b.ServerURL != canonicalResource(serverURL) {
		return nil, nil
	}
	if clientID != "" && b.Key.ClientID != clientID {
		return nil, nil
	}
	return b, m.data.token(b.Key)
}

// snapshotLocked takes the content of the credentials file for m.write,
// which the caller runs once m.mu is released. m.mu must be held.
func (m *Manager) snapshotLocked() *snapshot {
	m.taken++
	b, err := encodeStore(m.data)
	return &snapshot{seq: m.taken, data: b, err: err}
}

// write writes snap (nil: nothing changed) to the credentials file unless
// a newer snapshot was written meanwhile, so the file ends with the newest
// content whatever order the callers come in. A failure is logged: the
// tokens in memory still work, the next save retries. m.mu must not be
// held.
func (m *Manager) write(snap *snapshot) {
	if snap == nil {
		return
	}
	m.writeMu.Lock()
	defer m.writeMu.Unlock()
	if snap.seq <= m.written {
		return
	}
	m.written = snap.seq
	err := snap.err
	if err == nil {
		err = writeStore(m.path, snap.data)
	}
	if err != nil {
		m.log.Error("oauth credentials not saved", zap.Error(err))
	}
}

// Status reports server's login.
func (m *Manager) Status(server string) Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Status{Server: server, LoginInProgress: m.logins[server] != nil}
	if st := m.servers[server]; st != nil && st.needLogin != "" {
		s.LoginRequired, s.Reason = true, st.needLogin
	}
	b := m.data.Servers[server]
	if b == nil {
		return s
	}
	s.Issuer, s.Resource, s.ClientID = b.Key.Issuer, b.Key.Resource, b.Key.ClientID
	t := m.data.token(b.Key)
	if t == nil {
		return s
	}
	s.Scopes = slices.Clone(t.Scopes)
	s.Expiry = t.Expiry
	s.HasRefreshToken = t.RefreshToken != ""
	expired := !t.Expiry.IsZero() && !m.now().Before(t.Expiry) && t.RefreshToken == ""
	s.LoggedIn = !s.LoginRequired && !expired
	return s
}

// Logout forgets server's token (and the binding to it); the client
// registration with the authorization server is kept for the next login.
// A login in progress for server is cancelled.
func (m *Manager) Logout(server string) error {
	m.mu.Lock()
	flow := m.logins[server]
	b := m.data.Servers[server]
	var snap *snapshot
	if b != nil {
		delete(m.data.Servers, server)
		if !m.data.keyInUse(b.Key, server) {
			m.data.dropToken(b.Key)
		}
		snap = m.snapshotLocked()
	}
	st := m.state(server)
	st.needLogin, st.refreshedFor401 = "logged out", ""
	m.mu.Unlock()
	m.write(snap)
	if flow != nil {
		flow.Close()
	}
	if b != nil {
		m.log.Info("oauth logout", zap.String("server", server), zap.String("issuer", b.Key.Issuer))
	}
	return nil
}

// detached is the context of work several callers wait for (a refresh):
// one caller's cancellation must not fail the others.
func detached(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}
