// Package oauth is mcpd's OAuth 2.1 client for remote MCP servers, as the MCP
// authorization spec defines it: protected resource metadata (RFC 9728),
// authorization server metadata (RFC 8414 / OpenID discovery), a client
// identity (configured, else dynamic client registration, RFC 7591, done once
// per authorization server and stored), the authorization code flow with
// PKCE S256, state, the resource indicator (RFC 8707) and the iss check
// (RFC 9207), answered on a loopback redirect served for the duration of a
// login.
//
// The daemon holds one Manager. Each remote server's HTTP transport gets an
// Authorizer from Manager.For and asks it for a bearer token before every
// request; every app calling that server shares the one token. A login is
// started only by Manager.Login (mcpdctl login), never on its own: until
// then the Authorizer answers ErrLoginRequired with the hint to run it.
//
// Tokens are keyed by authorization server, resource and client, stored with
// the client registrations as one document through a Persister: a 0600 file
// in a 0700 directory (FileStore), or one Secret Service item with the file
// as the fallback (KeyringStore). Stored credentials that cannot be read
// yet (a locked keyring) are never overwritten: the Manager saves nothing
// until it has read them. They are refreshed
// before they expire and once on a 401, with one refresh in flight per token.
// Token and secret text never appears in logs, errors or Status.
//
// Discovery and registration use the MCP Go SDK's oauthex and auth packages;
// PKCE, the code exchange and refresh use golang.org/x/oauth2.
package oauth
