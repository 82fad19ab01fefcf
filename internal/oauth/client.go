package oauth

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/zap"
)

// clientIdentity is who mcpd is to one authorization server.
type clientIdentity struct {
	id, secret, method string
	configured         bool
}

// clientFor picks the client identity for asm: the configured one, else
// the one registered with this issuer before, else a new dynamic
// registration (stored, so it happens once per authorization server).
func (m *Manager) clientFor(ctx context.Context, asm *oauthex.AuthServerMeta, cfg Config, redirectURI string) (*clientIdentity, error) {
	if cfg.ClientID != "" {
		method := authNone
		if cfg.ClientSecret != "" {
			method = authBasic
			if sup := asm.TokenEndpointAuthMethodsSupported; len(sup) > 0 && !slices.Contains(sup, authBasic) && slices.Contains(sup, authPost) {
				method = authPost
			}
		}
		return &clientIdentity{id: cfg.ClientID, secret: cfg.ClientSecret, method: method, configured: true}, nil
	}
	m.mu.Lock()
	rec := m.data.client(asm.Issuer)
	m.mu.Unlock()
	if rec != nil {
		return &clientIdentity{id: rec.ClientID, secret: rec.ClientSecret, method: rec.AuthMethod}, nil
	}
	if asm.RegistrationEndpoint == "" {
		return nil, fmt.Errorf("authorization server %s offers no dynamic client registration: set oauth.clientId (and clientSecret) for this server in the config", asm.Issuer)
	}
	return m.register(ctx, asm, redirectURI)
}

// register registers mcpd as a native public client (RFC 7591) and stores
// the registration.
func (m *Manager) register(ctx context.Context, asm *oauthex.AuthServerMeta, redirectURI string) (*clientIdentity, error) {
	method := authNone
	if sup := asm.TokenEndpointAuthMethodsSupported; len(sup) > 0 && !slices.Contains(sup, authNone) {
		method = authBasic
		if !slices.Contains(sup, authBasic) && slices.Contains(sup, authPost) {
			method = authPost
		}
	}
	meta := &oauthex.ClientRegistrationMetadata{
		ClientName:              "mcpd",
		RedirectURIs:            []string{redirectURI},
		GrantTypes:              []string{"authorization_code", "refresh_token"},
		ResponseTypes:           []string{"code"},
		TokenEndpointAuthMethod: method,
		ApplicationType:         "native",
	}
	resp, err := oauthex.RegisterClient(ctx, asm.RegistrationEndpoint, meta, m.hc)
	if err != nil {
		var re *oauthex.ClientRegistrationError
		if errors.As(err, &re) {
			return nil, fmt.Errorf("registering with %s: refused: %s %s", asm.Issuer, remoteText(re.ErrorCode), remoteText(re.ErrorDescription))
		}
		// The SDK quotes the response body, which may hold a secret.
		return nil, fmt.Errorf("registering with %s failed (registration endpoint %s)", asm.Issuer, asm.RegistrationEndpoint)
	}
	if resp.TokenEndpointAuthMethod != "" {
		method = resp.TokenEndpointAuthMethod
	} else if resp.ClientSecret != "" && method == authNone {
		method = authBasic
	}
	rec := &clientRecord{
		Issuer:       asm.Issuer,
		ClientID:     resp.ClientID,
		ClientSecret: resp.ClientSecret,
		AuthMethod:   method,
		RedirectURIs: []string{redirectURI},
		RegisteredAt: m.now(),
	}
	m.mu.Lock()
	m.data.dropClient(asm.Issuer, "")
	m.data.Clients = append(m.data.Clients, rec)
	snap := m.snapshotLocked()
	m.mu.Unlock()
	m.write(snap)
	m.log.Info("oauth client registered", zap.String("issuer", asm.Issuer), zap.String("client_id", resp.ClientID))
	return &clientIdentity{id: rec.ClientID, secret: rec.ClientSecret, method: method}, nil
}
