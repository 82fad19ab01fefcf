package oauth

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/oauth2"
)

// LoginOptions adjust one login.
type LoginOptions struct {
	// Scopes are requested on top of what the server asks for.
	Scopes []string
}

// LoginFlow is a login waiting for the user: open URL in a browser, and
// Wait for the authorization server's redirect to the loopback listener.
// Call Wait or Close, which stop that listener.
type LoginFlow struct {
	// URL is the authorization URL for the user's browser.
	URL string
	// Issuer is the authorization server's issuer identifier.
	Issuer string
	// RedirectURI is the loopback redirect URI in the request.
	RedirectURI string
	// Scopes are the scopes asked for.
	Scopes []string

	m      *Manager
	server string
	p      pending
	srv    *http.Server
	ctx    context.Context // cancelled by Close; bounds the code exchange
	cancel context.CancelFunc
	result chan error    // the answer of the one accepted redirect
	closed chan struct{} // closed by Close
	served chan struct{} // closed when the listener's Serve returned

	mu       sync.Mutex // guards answered
	answered bool
	once     sync.Once // Close
}

// pending is what the redirect is checked against and the code exchanged
// with.
type pending struct {
	conf        *oauth2.Config
	verifier    string
	state       string
	issuer      string
	issRequired bool
	resource    string
	serverURL   string
	key         tokenKey
	configured  bool
}

// Login starts a login for server: discovery, a client identity, a
// loopback listener on 127.0.0.1, and the authorization URL (PKCE S256,
// state, resource). A login already in progress for server is cancelled.
func (m *Manager) Login(ctx context.Context, server, serverURL string, cfg Config, opts LoginOptions) (*LoginFlow, error) {
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("login %q: server URL %q is not an http(s) URL", server, serverURL)
	}
	m.mu.Lock()
	st := m.state(server)
	ch, want := st.challenge, slices.Clone(st.wantScopes)
	m.mu.Unlock()
	if ch == nil {
		if ch, err = m.probe(ctx, serverURL); err != nil {
			return nil, fmt.Errorf("login %q: %w", server, err)
		}
	}
	d, err := m.discover(ctx, canonicalResource(serverURL), ch)
	if err != nil {
		return nil, fmt.Errorf("login %q: %w", server, err)
	}
	ln, err := m.listenRedirect(d.asm.Issuer, cfg.RedirectPort)
	if err != nil {
		return nil, fmt.Errorf("login %q: %w", server, err)
	}
	redirect := "http://" + ln.Addr().String() + "/callback"
	client, err := m.clientFor(ctx, d.asm, cfg, redirect)
	if err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("login %q: %w", server, err)
	}
	key := tokenKey{Issuer: d.asm.Issuer, Resource: d.resource, ClientID: client.id}
	scopes := m.loginScopes(d, ch, key, cfg, opts, want)
	p := pending{
		conf:        oauth2Config(client.id, client.secret, d.asm.AuthorizationEndpoint, d.asm.TokenEndpoint, client.method, redirect, scopes),
		verifier:    oauth2.GenerateVerifier(),
		state:       rand.Text(),
		issuer:      d.asm.Issuer,
		issRequired: d.asm.AuthorizationResponseIssParameterSupported,
		resource:    d.resource,
		serverURL:   canonicalResource(serverURL),
		key:         key,
		configured:  client.configured,
	}
	f := m.startFlow(server, ln, p)
	f.Scopes = scopes
	m.log.Info("oauth login started", zap.String("server", server), zap.String("issuer", p.issuer),
		zap.String("client_id", client.id), zap.Strings("scopes", scopes), zap.String("redirect_uri", redirect))
	return f, nil
}

// loginScopes is what a login asks for: the challenge's scope, else the
// resource's scopes_supported, with the configured, asked-for, stepped-up
// and previously granted ones, and offline_access where the server lists it.
func (m *Manager) loginScopes(d *discovery, ch *challenge, key tokenKey, cfg Config, opts LoginOptions, want []string) []string {
	var base []string
	if ch != nil && len(ch.scopes) > 0 {
		base = ch.scopes
	} else if d.prm != nil {
		base = d.prm.ScopesSupported
	}
	var prev []string
	m.mu.Lock()
	if t := m.data.token(key); t != nil {
		prev = t.Scopes
	}
	m.mu.Unlock()
	scopes := union(base, cfg.Scopes, opts.Scopes, want, prev)
	if slices.Contains(d.asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}
	return scopes
}

// listenRedirect listens on 127.0.0.1: on port when set, else on the port
// of issuer's registered redirect URI when free, else on any port.
func (m *Manager) listenRedirect(issuer string, port int) (net.Listener, error) {
	if port != 0 {
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			return nil, fmt.Errorf("loopback redirect on the configured port %d: %w", port, err)
		}
		return ln, nil
	}
	m.mu.Lock()
	rec := m.data.client(issuer)
	m.mu.Unlock()
	if rec != nil && len(rec.RedirectURIs) > 0 {
		if u, err := url.Parse(rec.RedirectURIs[0]); err == nil && u.Hostname() == "127.0.0.1" && u.Port() != "" {
			if ln, err := net.Listen("tcp", u.Host); err == nil {
				return ln, nil
			}
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("loopback redirect: %w", err)
	}
	return ln, nil
}

// startFlow serves the redirect on ln and makes the flow server's login
// in progress, cancelling an earlier one.
func (m *Manager) startFlow(server string, ln net.Listener, p pending) *LoginFlow {
	ctx, cancel := context.WithCancel(context.Background())
	f := &LoginFlow{
		Issuer: p.issuer, RedirectURI: p.conf.RedirectURL,
		m: m, server: server, p: p, ctx: ctx, cancel: cancel,
		result: make(chan error, 1), closed: make(chan struct{}), served: make(chan struct{}),
	}
	f.URL = p.conf.AuthCodeURL(p.state, oauth2.S256ChallengeOption(p.verifier), oauth2.SetAuthURLParam("resource", p.resource))
	f.srv = &http.Server{Handler: http.HandlerFunc(f.callback), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		defer close(f.served)
		_ = f.srv.Serve(ln)
	}()
	m.mu.Lock()
	old := m.logins[server]
	m.logins[server] = f
	m.mu.Unlock()
	if old != nil {
		old.Close()
	}
	return f
}

// Wait waits for the redirect and the code exchange, and returns the
// server's new Status. It stops the listener when it returns.
func (f *LoginFlow) Wait(ctx context.Context) (Status, error) {
	defer f.Close()
	select {
	case err := <-f.result:
		if err != nil {
			return Status{}, fmt.Errorf("login %q: %w", f.server, err)
		}
		return f.m.Status(f.server), nil
	case <-f.closed:
		return Status{}, fmt.Errorf("login %q: %w", f.server, ErrLoginCancelled)
	case <-ctx.Done():
		return Status{}, fmt.Errorf("login %q: %w", f.server, ctx.Err())
	}
}

// Close abandons the login (when not yet done) and stops its listener.
func (f *LoginFlow) Close() {
	f.once.Do(func() {
		f.cancel()
		close(f.closed)
		sctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
		if err := f.srv.Shutdown(sctx); err != nil {
			_ = f.srv.Close()
		}
		stop()
		<-f.served
		f.m.mu.Lock()
		if f.m.logins[f.server] == f {
			delete(f.m.logins, f.server)
		}
		f.m.mu.Unlock()
	})
}

// callback serves the loopback redirect. A request without this login's
// state is discarded; the first with it completes the login.
func (f *LoginFlow) callback(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/callback" {
		http.NotFound(w, r)
		return
	}
	q := r.URL.Query()
	if q.Get("state") != f.p.state {
		http.Error(w, "mcpd: this answer does not belong to the login in progress (state mismatch).", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	first := !f.answered
	f.answered = true
	f.mu.Unlock()
	if !first {
		http.Error(w, "mcpd: this login was already answered.", http.StatusConflict)
		return
	}
	err := f.complete(q)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "mcpd: login to %s failed; mcpdctl login or the dashboard says why. You can close this tab.\n", f.server)
	} else {
		fmt.Fprintf(w, "mcpd: logged in to %s. You can close this tab.\n", f.server)
	}
	f.result <- err
}

// complete checks the authorization response (iss, RFC 9207; error) and
// exchanges its code for a token, which it stores.
func (f *LoginFlow) complete(q url.Values) error {
	p := f.p
	if q.Has("iss") {
		if iss := q.Get("iss"); iss != p.issuer {
			// Not from our authorization server: act on nothing it says.
			return fmt.Errorf("authorization response issuer %q is not %q (RFC 9207): ignored", remoteText(iss), p.issuer)
		}
	} else if p.issRequired {
		return fmt.Errorf("authorization response from %s has no iss, which its metadata promises (RFC 9207): ignored", p.issuer)
	}
	if e := q.Get("error"); e != "" {
		desc := ""
		if d := q.Get("error_description"); d != "" {
			desc = ": " + remoteText(d)
		}
		return fmt.Errorf("authorization refused by %s: %s%s", p.issuer, remoteText(e), desc)
	}
	code := q.Get("code")
	if code == "" {
		return fmt.Errorf("authorization response from %s has no code", p.issuer)
	}
	ctx := f.m.tokenContext(f.ctx, p.conf.Endpoint.TokenURL, p.resource)
	tok, err := p.conf.Exchange(ctx, code, oauth2.VerifierOption(p.verifier), oauth2.SetAuthURLParam("resource", p.resource))
	if err != nil {
		err = tokenError("exchanging the authorization code", p.issuer, err)
		f.forgetRegistrationIfInvalid(err)
		return err
	}
	f.store(tok)
	return nil
}

// forgetRegistrationIfInvalid drops a registered client the server no
// longer knows, so that the next login registers again.
func (f *LoginFlow) forgetRegistrationIfInvalid(err error) {
	if f.p.configured || !refusedWith(err, "invalid_client") {
		return
	}
	f.m.mu.Lock()
	f.m.data.dropClient(f.p.issuer, f.p.key.ClientID)
	snap := f.m.snapshotLocked()
	f.m.mu.Unlock()
	f.m.write(snap)
}

// store keeps tok as the server's token and clears its login state.
func (f *LoginFlow) store(tok *oauth2.Token) {
	m, p := f.m, f.p
	scopes := scopesOf(tok)
	if scopes == nil {
		scopes = p.conf.Scopes
	}
	rec := &tokenRecord{
		Key:           p.key,
		TokenEndpoint: p.conf.Endpoint.TokenURL,
		AuthMethod:    methodOf(p.conf),
		AccessToken:   tok.AccessToken,
		TokenType:     tok.TokenType,
		RefreshToken:  tok.RefreshToken,
		Expiry:        m.expiry(tok),
		Scopes:        scopes,
		ObtainedAt:    m.now(),
	}
	m.mu.Lock()
	old := m.data.Servers[f.server]
	m.data.putToken(rec)
	m.data.Servers[f.server] = &binding{ServerURL: p.serverURL, Key: p.key, ConfiguredClient: p.configured}
	if old != nil && old.Key != p.key && !m.data.keyInUse(old.Key, "") {
		m.data.dropToken(old.Key)
	}
	for name, b := range m.data.Servers {
		if b.Key == p.key {
			*m.state(name) = serverState{}
		}
	}
	snap := m.snapshotLocked()
	m.mu.Unlock()
	m.write(snap)
	m.log.Info("oauth login done", zap.String("server", f.server), zap.String("issuer", p.issuer),
		zap.Strings("scopes", scopes), zap.Time("expiry", rec.Expiry), zap.Bool("refresh_token", tok.RefreshToken != ""))
}

func methodOf(c *oauth2.Config) string {
	switch {
	case c.ClientSecret == "":
		return authNone
	case c.Endpoint.AuthStyle == oauth2.AuthStyleInHeader:
		return authBasic
	default:
		return authPost
	}
}
