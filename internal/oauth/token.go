package oauth

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// errRefused is the cause of a refresh the authorization server refused
// (as opposed to one that could not reach it).
var errRefused = errors.New("refresh refused")

// refusal is errRefused with the OAuth error code the server gave (RFC
// 6749 §5.2), "" for none.
type refusal struct{ code string }

func (r *refusal) Error() string        { return errRefused.Error() }
func (r *refusal) Is(target error) bool { return target == errRefused }

// refusedWith reports whether err is a refusal with the OAuth error code.
func refusedWith(err error, code string) bool {
	var r *refusal
	return errors.As(err, &r) && r.code == code
}

// Token endpoint client authentication methods (RFC 7591 §2).
const (
	authNone   = "none"
	authPost   = "client_secret_post"
	authBasic  = "client_secret_basic"
	maxTokenIO = 1 << 20
)

// authStyle maps a token endpoint auth method to oauth2's. It is never
// AuthStyleAutoDetect, which may send a second request.
func authStyle(method string) oauth2.AuthStyle {
	if method == authBasic {
		return oauth2.AuthStyleInHeader
	}
	return oauth2.AuthStyleInParams
}

// oauth2Config is the x/oauth2 configuration of one client at one server.
func oauth2Config(clientID, secret, authURL, tokenURL, method, redirect string, scopes []string) *oauth2.Config {
	return &oauth2.Config{
		ClientID:     clientID,
		ClientSecret: secret,
		Endpoint: oauth2.Endpoint{
			AuthURL:   authURL,
			TokenURL:  tokenURL,
			AuthStyle: authStyle(method),
		},
		RedirectURL: redirect,
		Scopes:      scopes,
	}
}

// tokenContext carries the HTTP client x/oauth2 uses for token requests:
// m.hc, adding the resource indicator (RFC 8707) to requests that lack it.
func (m *Manager) tokenContext(ctx context.Context, tokenURL, resource string) context.Context {
	base := m.hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	hc := *m.hc
	hc.Transport = &resourceTransport{base: base, tokenURL: tokenURL, resource: resource}
	return context.WithValue(ctx, oauth2.HTTPClient, &hc)
}

// refresh exchanges t's refresh token for a new token. A rotated refresh
// token replaces the old one; an unrotated one is kept.
func (m *Manager) refresh(ctx context.Context, t *tokenRecord, secret string) (*tokenRecord, error) {
	conf := oauth2Config(t.Key.ClientID, secret, "", t.TokenEndpoint, t.AuthMethod, "", nil)
	ctx = m.tokenContext(ctx, t.TokenEndpoint, t.Key.Resource)
	tok, err := conf.TokenSource(ctx, &oauth2.Token{RefreshToken: t.RefreshToken}).Token()
	if err != nil {
		return nil, tokenError("refreshing the token", t.Key.Issuer, err)
	}
	fresh := *t
	fresh.AccessToken = tok.AccessToken
	fresh.TokenType = tok.TokenType
	fresh.RefreshToken = tok.RefreshToken
	fresh.Expiry = m.expiry(tok)
	if s := scopesOf(tok); s != nil {
		fresh.Scopes = s
	}
	fresh.ObtainedAt = m.now()
	return &fresh, nil
}

// tokenError describes a failed token request without the response body
// (which may quote what was sent). A refusal wraps errRefused.
func tokenError(what, issuer string, err error) error {
	var re *oauth2.RetrieveError
	if !errors.As(err, &re) {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the token endpoint: said below
		}
		return fmt.Errorf("%s at %s: %w", what, issuer, err)
	}
	code := re.ErrorCode
	if code == "" && re.Response != nil {
		code = re.Response.Status
	}
	desc := ""
	if re.ErrorDescription != "" {
		desc = ": " + remoteText(re.ErrorDescription)
	}
	status := 0
	if re.Response != nil {
		status = re.Response.StatusCode
	}
	if status == http.StatusBadRequest || status == http.StatusUnauthorized || re.ErrorCode != "" {
		return fmt.Errorf("%s at %s: %s%s: %w", what, issuer, remoteText(code), desc, &refusal{code: re.ErrorCode})
	}
	return fmt.Errorf("%s at %s: %s%s", what, issuer, remoteText(code), desc)
}

// expiry is when tok expires by m's clock (zero: unknown).
func (m *Manager) expiry(tok *oauth2.Token) time.Time {
	if tok.ExpiresIn > 0 {
		return m.now().Add(time.Duration(tok.ExpiresIn) * time.Second)
	}
	return tok.Expiry
}

// refreshAt is when t is refreshed: refreshSkew before it expires, or half
// way through its life when that is shorter (zero: never, for a token
// without expiry).
func refreshAt(t *tokenRecord) time.Time {
	if t.Expiry.IsZero() {
		return time.Time{}
	}
	skew := refreshSkew
	if life := t.Expiry.Sub(t.ObtainedAt); life < 2*skew {
		skew = life / 2
	}
	return t.Expiry.Add(-skew)
}

func scopesOf(tok *oauth2.Token) []string {
	s, _ := tok.Extra("scope").(string)
	if s == "" {
		return nil
	}
	return strings.Fields(s)
}

// resourceTransport adds resource=… to form POSTs to the token endpoint
// that have none: x/oauth2 sends extra parameters with a code exchange but
// not with a refresh, and the MCP spec wants the indicator in both.
type resourceTransport struct {
	base     http.RoundTripper
	tokenURL string
	resource string
}

func (t *resourceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodPost || req.Body == nil || t.resource == "" || req.URL.String() != t.tokenURL {
		return t.base.RoundTrip(req)
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxTokenIO))
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err == nil && !form.Has("resource") {
		form.Set("resource", t.resource)
		body = []byte(form.Encode())
	}
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.base.RoundTrip(r)
}
