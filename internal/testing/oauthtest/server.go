// Package oauthtest is a fake OAuth authorization server in front of an
// MCP resource server, strict about what the MCP authorization spec asks
// of a client (PKCE S256, resource indicators, RFC 9207 iss, dynamic
// registration as a native app, refresh token rotation). It is used by
// tests only.
package oauthtest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Settings change how the Server answers; change them with Set.
type Settings struct {
	// ExpiresIn is the access tokens' lifetime in seconds; 0 sends no
	// expires_in.
	ExpiresIn int
	// IssMode is how the authorization response carries iss: "correct",
	// "wrong" (another issuer) or "omit".
	IssMode string
	// IssSupported is the metadata's
	// authorization_response_iss_parameter_supported.
	IssSupported bool
	// ResourceScope is the scope= of the 401 challenge ("": none).
	ResourceScope string
	// NeedScope is a scope without which /mcp answers 403
	// insufficient_scope ("": none).
	NeedScope string
	// RefuseTokens makes /mcp answer 401 invalid_token to every token,
	// fresh ones too.
	RefuseTokens bool
	// RefreshUnavailable makes the token endpoint answer refresh grants
	// 503 (counted in Refreshes): a transient failure, not a refusal.
	RefreshUnavailable bool
	// HoldRefresh, when set, holds each refresh grant (counted first)
	// until it is closed.
	HoldRefresh chan struct{}
}

// Server is an authorization server and, at /mcp, a resource server on one
// httptest server.
type Server struct {
	// Registrations, Refreshes and Exchanges count the client
	// registrations, refresh grants and authorization code grants asked for.
	Registrations, Refreshes, Exchanges atomic.Int32

	srv      *httptest.Server
	resource http.Handler

	mu             sync.Mutex // guards the fields below
	settings       Settings
	challenges     map[string]string // code → code_challenge
	codeScopes     map[string]string // code → scope
	access         map[string]string // valid access token → scope
	refresh        map[string]string // valid refresh token → scope
	clients        map[string]string // client_id → secret
	forgotten      map[string]bool   // client_ids the token endpoint no longer knows
	authorizeQuery url.Values        // the last authorization request
	tokenForms     []url.Values      // every token request
	issued         []string          // every token, code and client id handed out
}

// New starts a Server; /mcp is served by resource for a request with a
// valid token (nil: a JSON-RPC result {}). It is closed when the test ends.
func New(t testing.TB, resource http.Handler) *Server {
	s := &Server{resource: resource, settings: Settings{ExpiresIn: 3600, IssMode: "correct", IssSupported: true},
		challenges: map[string]string{}, codeScopes: map[string]string{}, access: map[string]string{},
		refresh: map[string]string{}, clients: map[string]string{}, forgotten: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", s.mcp)
	mux.HandleFunc("/.well-known/oauth-protected-resource/mcp", s.prm)
	mux.HandleFunc("/.well-known/oauth-authorization-server", s.asMeta)
	mux.HandleFunc("/register", s.register)
	mux.HandleFunc("/authorize", s.authorize)
	mux.HandleFunc("/token", s.token)
	s.srv = httptest.NewServer(mux)
	t.Cleanup(func() {
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
	return s
}

// URL is the issuer (the server's base URL).
func (s *Server) URL() string { return s.srv.URL }

// MCPURL is the resource server's MCP endpoint.
func (s *Server) MCPURL() string { return s.srv.URL + "/mcp" }

func (s *Server) secret(prefix string) string {
	v := prefix + "-" + rand.Text()
	s.issued = append(s.issued, v)
	return v
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// bearerOf is the bearer token of r ("" when none).
func bearerOf(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

func (s *Server) mcp(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	tok := bearerOf(r)
	scope, ok := s.access[tok]
	set := s.settings
	s.mu.Unlock()
	if !ok || set.RefuseTokens {
		ch := fmt.Sprintf(`Bearer resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.URL())
		if tok != "" {
			// RFC 6750 §3.1: an expired or revoked token.
			ch += `, error="invalid_token", error_description="the access token expired"`
		}
		if set.ResourceScope != "" {
			ch += fmt.Sprintf(`, scope="%s"`, set.ResourceScope)
		}
		w.Header().Set("WWW-Authenticate", ch)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_token"})
		return
	}
	if set.NeedScope != "" && !slices.Contains(strings.Fields(scope), set.NeedScope) {
		w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, set.NeedScope, s.URL()))
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "insufficient_scope"})
		return
	}
	if s.resource != nil {
		s.resource.ServeHTTP(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"jsonrpc": "2.0", "id": 1, "result": map[string]any{}})
}

func (s *Server) prm(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"resource": s.MCPURL(), "authorization_servers": []string{s.URL()},
		"scopes_supported": []string{"read"},
	})
}

func (s *Server) asMeta(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]any{
		"issuer": s.URL(), "authorization_endpoint": s.URL() + "/authorize",
		"token_endpoint": s.URL() + "/token", "registration_endpoint": s.URL() + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none"},
		"authorization_response_iss_parameter_supported": s.settings.IssSupported,
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var meta map[string]any
	if err := json.NewDecoder(r.Body).Decode(&meta); err != nil || meta["application_type"] != "native" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	s.Registrations.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "client-" + rand.Text()
	s.clients[id] = ""
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": meta["redirect_uris"], "token_endpoint_auth_method": "none"})
}

func (s *Server) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.authorizeQuery = q
	if q.Get("code_challenge_method") != "S256" || q.Get("resource") != s.MCPURL() || q.Get("state") == "" {
		http.Error(w, "bad authorization request", http.StatusBadRequest)
		return
	}
	if _, ok := s.clients[q.Get("client_id")]; !ok {
		http.Error(w, "unknown client", http.StatusBadRequest)
		return
	}
	redirect, err := url.Parse(q.Get("redirect_uri"))
	if err != nil || redirect.Hostname() != "127.0.0.1" {
		http.Error(w, "bad redirect_uri", http.StatusBadRequest)
		return
	}
	code := s.secret("code")
	s.challenges[code] = q.Get("code_challenge")
	s.codeScopes[code] = q.Get("scope")
	rq := redirect.Query()
	rq.Set("code", code)
	rq.Set("state", q.Get("state"))
	switch s.settings.IssMode {
	case "correct":
		rq.Set("iss", s.URL())
	case "wrong":
		rq.Set("iss", "https://evil.example")
	}
	redirect.RawQuery = rq.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_request"})
		return
	}
	s.mu.Lock()
	hold := s.settings.HoldRefresh
	s.mu.Unlock()
	if hold != nil && r.PostForm.Get("grant_type") == "refresh_token" {
		s.Refreshes.Add(1)
		<-hold
		s.Refreshes.Add(-1) // counted once, below
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	form := r.PostForm
	s.tokenForms = append(s.tokenForms, form)
	if s.forgotten[form.Get("client_id")] {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "invalid_client"})
		return
	}
	if form.Get("resource") != s.MCPURL() {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_target"})
		return
	}
	var scope string
	switch form.Get("grant_type") {
	case "authorization_code":
		s.Exchanges.Add(1)
		code := form.Get("code")
		ch, ok := s.challenges[code]
		sum := sha256.Sum256([]byte(form.Get("code_verifier")))
		if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != ch {
			writeJSON(w, http.StatusBadRequest, map[string]string{"error": "invalid_grant"})
			return
		}
		delete(s.challenges, code)
		scope = s.codeScopes[code]
	case "refresh_token":
		s.Refreshes.Add(1)
		if s.settings.RefreshUnavailable {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		rt := form.Get("refresh_token")
		sc, ok := s.refresh[rt]
		if !ok {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant", "error_description": "refresh token revoked"})
			return
		}
		delete(s.refresh, rt) // rotation: a refresh token is good once
		scope = sc
	default:
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	at, rt := s.secret("at"), s.secret("rt")
	s.access[at] = scope
	s.refresh[rt] = scope
	resp := map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "scope": scope}
	if s.settings.ExpiresIn > 0 {
		resp["expires_in"] = s.settings.ExpiresIn
	}
	writeJSON(w, http.StatusOK, resp)
}

// RevokeAll forgets every token the server issued: the resource server
// refuses the access tokens as expired, the refresh tokens are invalid_grant.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

// ForgetClients makes the token endpoint answer 401 invalid_client to
// every client registered so far, as a server that lost its registrations
// does; clients registered later are known.
func (s *Server) ForgetClients() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id := range s.clients {
		s.forgotten[id] = true
	}
}

// RevokeAccess forgets the access tokens only.
func (s *Server) RevokeAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// Set changes the server's settings.
func (s *Server) Set(fn func(*Settings)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(&s.settings)
}

// Secrets are every token and code the server handed out: none may show
// in a log, a status or an error.
func (s *Server) Secrets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.issued)
}

// AuthorizeQuery is the query of the last authorization request.
func (s *Server) AuthorizeQuery() url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authorizeQuery
}

// TokenForms are the forms of every token request, oldest first.
func (s *Server) TokenForms() []url.Values {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tokenForms)
}
