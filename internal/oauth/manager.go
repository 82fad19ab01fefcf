package oauth

import (
	"context"
	"errors"
	"fmt"
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
	store Persister
	log   *zap.Logger
	hc    *http.Client
	now   func() time.Time

	// loadMu serialises loads of the stored credentials; it is taken
	// before mu and writeMu, never while holding either.
	loadMu sync.Mutex

	mu sync.Mutex // guards data, loaded…dirty, servers, refreshing, logins and taken; held for no I/O
	// data are the credentials in memory: those stored, once loaded.
	data *storeData
	// loaded is set once the stored credentials were read (or found
	// unreadable for good). Until then nothing is saved, so that what is
	// stored and could not be read (a locked keyring) is not replaced.
	loaded   bool
	loadErr  error     // why they are not loaded yet
	lastLoad time.Time // the last attempt
	// dirty is set when data changed before the load: a successful load
	// merges the change over what it read, and saves.
	dirty      bool
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
// stateDir/oauth.json (NewManagerWith a FileStore).
func NewManager(stateDir string, log *zap.Logger, hc *http.Client) *Manager {
	return NewManagerWith(FileStore(filepath.Join(stateDir, FileName)), log, hc)
}

// NewManagerWith returns a Manager keeping its credentials in store, which
// it loads now. hc makes every request to authorization and resource
// servers (nil: http.DefaultClient). Credentials that cannot be decoded
// are logged and left as they are; a login writes new ones. Credentials
// that cannot be read for now (ErrUnavailable: a locked keyring) are read
// again at the next use after loadRetry, a login or a save; nothing is
// saved before, and a change made meanwhile is merged over them then.
func NewManagerWith(store Persister, log *zap.Logger, hc *http.Client) *Manager {
	if log == nil {
		log = zap.NewNop()
	}
	if hc == nil {
		hc = http.DefaultClient
	}
	m := &Manager{
		store:      store,
		log:        log,
		hc:         hc,
		now:        time.Now,
		data:       emptyStore(),
		servers:    map[string]*serverState{},
		refreshing: map[tokenKey]*refreshFlight{},
		logins:     map[string]*LoginFlow{},
	}
	m.load(true)
	return m
}

// loadRetry is how often the Manager tries again to read credentials it
// could not (a locked keyring), when they are used.
const loadRetry = 10 * time.Second

// load reads the stored credentials unless they are loaded, and reports
// whether they are. Unless force, it tries at most once per loadRetry.
// m.mu must not be held.
func (m *Manager) load(force bool) bool {
	m.mu.Lock()
	loaded := m.loaded
	m.mu.Unlock()
	if loaded {
		return true
	}
	ok, snap := m.loadOnce(force)
	m.write(snap) // once loadMu is released: write loads too
	return ok
}

// loadOnce is load but for saving what changed meanwhile: the snapshot it
// returns.
func (m *Manager) loadOnce(force bool) (bool, *snapshot) {
	m.loadMu.Lock()
	defer m.loadMu.Unlock()
	m.mu.Lock()
	if m.loaded {
		m.mu.Unlock()
		return true, nil
	}
	if !force && !m.lastLoad.IsZero() && m.now().Sub(m.lastLoad) < loadRetry {
		m.mu.Unlock()
		return false, nil
	}
	m.lastLoad = m.now()
	m.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	b, err := m.store.Load(ctx)
	cancel()
	var d *storeData
	if err == nil {
		d, err = decodeStore(b, m.store.Where())
	}
	if errors.Is(err, ErrUnavailable) {
		m.mu.Lock()
		first := m.loadErr == nil
		m.loadErr = err
		m.mu.Unlock()
		if first {
			m.log.Warn("oauth credentials not loaded yet; nothing is saved until they are, tried again when used",
				zap.String("store", m.store.Where()), zap.Error(err))
		}
		return false, nil
	}
	if err != nil {
		m.log.Warn("oauth credentials not loaded", zap.Error(err))
		d = emptyStore()
	}
	m.mu.Lock()
	if m.dirty {
		d = merge(d, m.data)
	}
	retried := m.loadErr != nil
	m.data, m.loaded, m.loadErr = d, true, nil
	var snap *snapshot
	if m.dirty {
		m.dirty = false
		snap = m.snapshotLocked()
	}
	m.mu.Unlock()
	if err == nil && retried {
		m.log.Info("oauth credentials loaded", zap.String("store", m.store.Where()))
	}
	return true, snap
}

// Path is the credentials file, "" when they are not kept in a file.
func (m *Manager) Path() string {
	if p, ok := m.store.(interface{ Path() string }); ok {
		return p.Path()
	}
	return ""
}

// StoreStatus says where the credentials are kept, and if they could not
// be read yet, why: for mcpdctl status. It tries to read them again (at
// most once per loadRetry).
func (m *Manager) StoreStatus() string {
	if m.load(false) {
		return m.store.Where()
	}
	m.mu.Lock()
	err := m.loadErr
	m.mu.Unlock()
	return fmt.Sprintf("%s (not loaded: %v)", m.store.Where(), err)
}

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
	if !m.loaded {
		m.dirty = true
	}
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
	// A save before the stored credentials are read would replace them:
	// read them first (merging this change and saving), else keep the
	// change in memory only.
	if !m.load(true) {
		m.mu.Lock()
		err := m.loadErr
		m.mu.Unlock()
		m.log.Warn("oauth credentials not saved: the stored ones are not loaded yet; the change is kept in memory and saved once they are",
			zap.String("store", m.store.Where()), zap.Error(err))
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
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = m.store.Save(ctx, snap.data)
		cancel()
	}
	if err != nil {
		m.log.Error("oauth credentials not saved", zap.Error(err))
	}
}

// Status reports server's login.
func (m *Manager) Status(server string) Status {
	m.load(false)
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
