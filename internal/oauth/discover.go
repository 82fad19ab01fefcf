package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// challenge is what a Bearer WWW-Authenticate challenge said.
type challenge struct {
	resourceMetadata string
	scopes           []string
	errorCode        string
}

// parseChallenge reads the Bearer challenge of WWW-Authenticate header
// values; nil when there is none or it cannot be parsed.
func parseChallenge(values []string) *challenge {
	cs, err := oauthex.ParseWWWAuthenticate(values)
	if err != nil {
		return nil
	}
	for _, c := range cs {
		if c.Scheme != "bearer" {
			continue
		}
		return &challenge{
			resourceMetadata: c.Params["resource_metadata"],
			scopes:           strings.Fields(c.Params["scope"]),
			errorCode:        c.Params["error"],
		}
	}
	return nil
}

// canonicalResource is the canonical URI of an MCP server (RFC 8707, MCP
// authorization): scheme and host lower-cased, no fragment, no query.
func canonicalResource(serverURL string) string {
	u, err := url.Parse(serverURL)
	if err != nil {
		return serverURL
	}
	u.Scheme = strings.ToLower(u.Scheme)
	u.Host = strings.ToLower(u.Host)
	u.Fragment, u.RawFragment = "", ""
	return u.String()
}

// prmCandidate is a protected resource metadata URL and the resource its
// document must name.
type prmCandidate struct{ url, resource string }

// prmCandidates lists, in the spec's order, where the protected resource
// metadata of resource may be: the challenge's resource_metadata, then the
// path-based well-known URI, then the root one.
func prmCandidates(fromChallenge, resource string) []prmCandidate {
	var cs []prmCandidate
	if fromChallenge != "" {
		cs = append(cs, prmCandidate{fromChallenge, resource})
	}
	u, err := url.Parse(resource)
	if err != nil {
		return cs
	}
	origin := (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	if p := strings.Trim(u.Path, "/"); p != "" {
		cs = append(cs, prmCandidate{origin + "/.well-known/oauth-protected-resource/" + p, resource})
	}
	root := prmCandidate{origin + "/.well-known/oauth-protected-resource", resource}
	if strings.Trim(u.Path, "/") != "" {
		root.resource = origin
	}
	return append(cs, root)
}

// discovery is what discovery found out about one protected resource.
type discovery struct {
	resource string
	prm      *oauthex.ProtectedResourceMetadata // nil: 2025-03-26 fallback
	asm      *oauthex.AuthServerMeta
}

// discover finds the protected resource metadata (stopping at the first
// that answers), then its authorization server's metadata.
func (m *Manager) discover(ctx context.Context, resource string, ch *challenge) (*discovery, error) {
	d := &discovery{resource: resource}
	var mismatch error
	from := ""
	if ch != nil {
		from = ch.resourceMetadata
	}
	for _, c := range prmCandidates(from, resource) {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, c.url, c.resource, m.hc)
		if err != nil {
			// The SDK's errors are strings; a document naming another
			// resource must stop the login, a missing one must not.
			if strings.Contains(err.Error(), "got metadata resource") {
				mismatch = err
			}
			continue
		}
		if len(prm.AuthorizationServers) == 0 {
			return nil, fmt.Errorf("protected resource metadata at %s names no authorization server", c.url)
		}
		d.prm, d.resource = prm, prm.Resource
		break
	}
	if d.prm == nil && mismatch != nil {
		return nil, fmt.Errorf("protected resource metadata of %s: %w", resource, mismatch)
	}
	issuer := ""
	if d.prm != nil {
		issuer = d.prm.AuthorizationServers[0]
	} else {
		u, err := url.Parse(resource)
		if err != nil {
			return nil, fmt.Errorf("server URL %q: %w", resource, err)
		}
		issuer = (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
	}
	asm, err := auth.GetAuthServerMetadata(ctx, issuer, m.hc)
	if err != nil {
		return nil, fmt.Errorf("authorization server metadata of %s: %w", issuer, err)
	}
	if asm == nil {
		if d.prm != nil {
			return nil, fmt.Errorf("authorization server %s publishes no metadata", issuer)
		}
		if ch == nil {
			return nil, fmt.Errorf("%s does not use OAuth: no Bearer challenge, no protected resource metadata, no authorization server metadata", resource)
		}
		// The 2025-03-26 spec's defaults for a server without metadata.
		asm = &oauthex.AuthServerMeta{
			Issuer:                        strings.TrimSuffix(issuer, "/"),
			AuthorizationEndpoint:         strings.TrimSuffix(issuer, "/") + "/authorize",
			TokenEndpoint:                 strings.TrimSuffix(issuer, "/") + "/token",
			RegistrationEndpoint:          strings.TrimSuffix(issuer, "/") + "/register",
			CodeChallengeMethodsSupported: []string{"S256"},
		}
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, fmt.Errorf("authorization server %s does not support PKCE S256 (code_challenge_methods_supported: %v)", issuer, asm.CodeChallengeMethodsSupported)
	}
	// The user's browser opens it (mcpdctl login, the dashboard): an
	// http(s) URL only, never a javascript: or file: one.
	if u, err := url.Parse(asm.AuthorizationEndpoint); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("authorization server %s: authorization_endpoint %q is not an http(s) URL", issuer, remoteText(asm.AuthorizationEndpoint))
	}
	d.asm = asm
	return d, nil
}

// probe sends server an unauthenticated MCP request to learn its
// challenge; nil when it asks for none.
func (m *Manager) probe(ctx context.Context, serverURL string) (*challenge, error) {
	const body = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcpd","version":"0"}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, serverURL, strings.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", serverURL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := m.hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("reaching %s: %w", serverURL, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return nil, nil
	}
	return parseChallenge(resp.Header.Values("WWW-Authenticate")), nil
}

// union is a ∪ b ∪ …, in order of first appearance.
func union(sets ...[]string) []string {
	var out []string
	for _, s := range sets {
		for _, v := range s {
			if v != "" && !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}
