// Package dashboard serves mcpd's live page on the HTTP face: the servers
// and their states, the connected apps, each server's tools, logs, audit
// records and pins, with start, stop, restart, tool calls, approvals and
// remote servers' OAuth logins, all through the daemon's in-process
// service (core.Service, as its app core.App), never gRPC, in the
// service's plain values (internal/service), not mcpd.v1's.
//
// It runs behind the face's guards (httpface.Face: same-uid peer, Host
// and Origin), and adds its own: every state-changing request is a POST
// carrying the page's token, an HMAC of the session cookie under a key
// that lives as long as the daemon, so that another origin that can send
// the cookie (cookies ignore ports) still cannot forge a request; a
// cross-site fetch (Sec-Fetch-Site) of the data endpoints is refused; and
// no response carries a server's environment or header values.
package dashboard
