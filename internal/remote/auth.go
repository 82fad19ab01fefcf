package remote

import (
	"context"
	"errors"
	"net/http"
)

// Authorizer supplies the credentials of one remote server (OAuth, or any
// other bearer scheme). The Conn calls Token before every HTTP request and
// sends "Authorization: Bearer <token>" when it is not empty; on a 401 or
// 403 answer it calls OnUnauthorized and, when that returns nil, sends the
// request once more with a fresh Token. A 401 to that retry ends the
// request with ErrLoginRequired, without calling OnUnauthorized again.
// Both must be safe for concurrent use and return once ctx ends.
type Authorizer interface {
	// Token returns the access token for the next request; "" sends no
	// Authorization header. An error wrapping ErrLoginRequired means the
	// user must log in first (no usable token, refresh refused); the
	// server then waits in the "login required" state.
	Token(ctx context.Context) (string, error)
	// OnUnauthorized is told of a 401 or 403 response (its body already
	// read and closed; headers such as WWW-Authenticate intact). It
	// returns nil when a retry may succeed (a token was refreshed or a
	// step-up scope obtained), an error wrapping ErrLoginRequired when the
	// user must log in, or another error that fails the request.
	OnUnauthorized(ctx context.Context, resp *http.Response) error
}

// Refuser is an Authorizer that keeps a login state: the Conn tells it of
// a 401 to the request it retried with a fresh Token, so that it records
// that a login is needed, as the server's state does (one login state per
// server). Its error, which should wrap ErrLoginRequired, ends the request
// (still wrapping ErrLoginRequired either way).
type Refuser interface {
	Refused(ctx context.Context, resp *http.Response) error
}

var (
	// ErrLoginRequired means the server needs credentials the user must
	// obtain interactively (mcpdctl login NAME).
	ErrLoginRequired = errors.New("login required")
	// ErrUnauthorized means the server refused the credentials mcpd sent
	// (401 or 403) and no Authorizer could fix it: the configured headers
	// are wrong.
	ErrUnauthorized = errors.New("unauthorized")
	// ErrSessionExpired means the server no longer knows the connection's
	// Mcp-Session-Id (404): a new session must be started. The requests in
	// flight fail with it; the one that got the 404 also with
	// ErrNotProcessed.
	ErrSessionExpired = errors.New("session expired")
	// ErrNotProcessed means the server refused the request before
	// processing it (the 404 of an expired session): it may be sent again.
	ErrNotProcessed = errors.New("the request was not processed")
	// ErrResponseTooLarge means a response was larger than MaxMessageSize
	// and was discarded.
	ErrResponseTooLarge = errors.New("response larger than maxLineSize")
	// ErrClosed means the connection was closed by mcpd.
	ErrClosed = errors.New("connection closed")
)

// authorize sets the Authorization header of req from a, if any.
func authorize(ctx context.Context, a Authorizer, req *http.Request) error {
	if a == nil {
		return nil
	}
	tok, err := a.Token(ctx)
	if err != nil {
		return err
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	return nil
}
