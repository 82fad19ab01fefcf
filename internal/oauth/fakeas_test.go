package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeAS is an authorization server and an MCP resource server on one
// httptest server, strict about what the MCP authorization spec requires.
type fakeAS struct {
	t   *testing.T
	srv *httptest.Server

	registrations atomic.Int32
	refreshes     atomic.Int32
	exchanges     atomic.Int32

	mu             sync.Mutex // guards the fields below
	expiresIn      int        // seconds; 0: no expires_in
	issMode        string     // "correct" (default), "wrong", "omit"
	issSupported   bool
	resourceScope  string            // scope= of the 401 challenge
	needScope      string            // a scope /mcp answers 403 insufficient_scope without
	challenges     map[string]string // code → code_challenge
	codeScopes     map[string]string // code → scope
	access         map[string]string // valid access token → scope
	refresh        map[string]string // valid refresh token → scope
	clients        map[string]string // client_id → secret
	authorizeQuery url.Values        // the last authorization request
	tokenForms     []url.Values      // every token request
	issued         []string          // every token and secret handed out
}

func newFakeAS(t *testing.T) *fakeAS {
	f := &fakeAS{t: t, expiresIn: 3600, issMode: "correct", issSupported: true,
		challenges: map[string]string{}, codeScopes: map[string]string{}, access: map[string]string{},
		refresh: map[string]string{}, clients: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", f.mcp)
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", f.prm)
	mux.HandleFunc("/.well-known/oauth-authorization-server", f.asMeta)
	mux.HandleFunc("/register", f.register)
	mux.HandleFunc("/authorize", f.authorize)
	mux.HandleFunc("/token", f.token)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAS) url() string    { return f.srv.URL }
func (f *fakeAS) mcpURL() string { return f.srv.URL + "/mcp" }

func (f *fakeAS) secret(prefix string) string {
	s := prefix + "-" + rand.Text()
	f.issued = append(f.issued, s)
	return s
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAS) mcp(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := bearerOf(r)
	scope, ok := f.access[tok]
	if !ok {
		ch := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, f.url())
		if f.resourceScope != "" {
			ch += fmt.Sprintf(`, scope="%s"`, f.resourceScope)
		}
		w.Header().Set("WWW-Authenticate", ch)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	if f.needScope != "" && !strings.Contains(" "+scope+" ", " "+f.needScope+" ") {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, f.needScope, f.url()))
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "insufficient_scope"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
}

func (f *fakeAS) prm(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"resource": f.mcpURL(), "authorization_servers": []string{f.url()},
		"scopes_supported": []string{"read"},
	})
}

func (f *fakeAS) asMeta(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": f.url(), "authorization_endpoint": f.url() + "/authorize",
		"token_endpoint": f.url() + "/token", "registration_endpoint": f.url() + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"authorization_response_iss_parameter_supported": f.issSupported,
	})
}

func (f *fakeAS) register(w http.ResponseWriter, r *http.Request) {
	var meta map[string]any
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || meta["application_type"] != "native" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	f.registrations.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	id := "client-" + rand.Text()
	f.clients[id] = ""
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
}

func (f *fakeAS) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.authorizeQuery = q
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != f.mcpURL() || q.Get("state") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if _, ok := f.clients[q.Get("client_id")]; !ok {
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	}
	code := f.secret("code")
	f.challenges[code] = q.Get("code_challenge")
	f.codeScopes[code] = q.Get("scope")
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Hostname() != "127.0.0.1" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	rq := redirect.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	switch f.issMode {
	case "correct":
		rq.Set("iss", f.url())
	case "wrong":
		rq.Set("iss", "https://evil.example")
	}
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (f *fakeAS) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	form := r.PostForm
	f.tokenForms = append(f.tokenForms, form)
	if form.Get("resource") != f.mcpURL() {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target"})
		return
	}
	var scope string
	switch form.Get("grant_type") {
	case "authorization_code":
		f.exchanges.Add(1)
		code := form.Get("code")
		ch, ok := f.challenges[code]
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(f.challenges, code)
		scope = f.codeScopes[code]
	case "refresh_token":
		f.refreshes.Add(1)
		rt := form.Get("refresh_token")
		s, ok := f.refresh[rt]
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "refresh token revoked"})
			return
		}
		delete(f.refresh, rt) // rotation: a refresh token is good once
		scope = s
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := f.secret("at"), f.secret("rt")
	f.access[at] = scope
	f.refresh[rt] = scope
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "scope": scope}
	if f.expiresIn > 0 {
		resp["expires_in"] = f.expiresIn
	}
	writeJSON(w, http.StatusOK, resp)
}

// revokeAll forgets every token the server issued.
func (f *fakeAS) revokeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.access)
	clear(f.refresh)
}

// revokeAccess forgets the access tokens only.
func (f *fakeAS) revokeAccess() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.access)
}

func (f *fakeAS) set(fn func(f *fakeAS)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeAS) secrets() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.issued...)
}
