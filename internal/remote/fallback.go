package remote

import (
	"fmt"
	"net/http"
)

// The fallback from Streamable HTTP to the 2024-11-05 HTTP+SSE transport
// (the MCP specification's backwards compatibility of the Streamable HTTP
// transport): an old server at a Streamable HTTP URL
// answers the POSTs of both eras with 400, 404 or 405 and no JSON-RPC
// message, and serves its event stream on a GET of the same URL.

// isFallbackStatus reports whether an HTTP status without a JSON-RPC body
// says the URL may be an HTTP+SSE server's.
func isFallbackStatus(status int) bool {
	return status == http.StatusBadRequest || status == http.StatusNotFound || status == http.StatusMethodNotAllowed
}

// noteDiscover records how the server/discover probe was answered: with
// a fallback status and no JSON-RPC message, or otherwise (which rules the
// fallback out).
func (c *Conn) noteDiscover(fallbackStatus bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !fallbackStatus {
		c.discoverAnswered = true
	}
}

// mayFallBack reports whether the failed initialize of request s, answered
// status without a JSON-RPC message, should be retried over HTTP+SSE: the
// server was configured as Streamable HTTP, its server/discover probe (if
// any) failed the same way, and this Conn has not tried yet. It marks the
// attempt.
func (c *Conn) mayFallBack(s *stream, status int) bool {
	if s.method != "initialize" || c.opts.Type != TypeHTTP || !isFallbackStatus(status) || s.cancelled.Load() {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.discoverAnswered || c.triedFallback || c.sessionID != "" {
		return false
	}
	c.triedFallback = true
	return true
}

// fallBack opens the HTTP+SSE event stream at the server's URL and sends
// initialize again on it; its answer arrives on the stream. When the
// stream cannot be opened, initialize fails with both causes.
func (c *Conn) fallBack(s *stream, m message, msg []byte, herr *HTTPError) {
	c.event("HTTP %s on initialize without a JSON-RPC answer; trying the 2024-11-05 HTTP+SSE transport at %s", herr.Text, c.where)
	if err := c.openSSE(s.ctx); err != nil {
		err = fmt.Errorf("%w; the HTTP+SSE transport at that URL failed too: %w", herr, err)
		if c.life.Err() != nil {
			c.fail(err) // the wait for the endpoint event was cut short
			return
		}
		c.callError(s.id, err)
		return
	}
	c.warn("using the 2024-11-05 HTTP+SSE transport: the server does not speak Streamable HTTP")
	_ = c.postSSE(s.ctx, m, msg) // a failure ends the Conn or fails the call
}

// usesSSE reports whether messages go over the HTTP+SSE transport: it
// was configured, or the Conn fell back to it.
func (c *Conn) usesSSE() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endpoint != nil
}

// Transport is the transport the Conn speaks: TypeSSE when configured or
// fallen back to, else TypeHTTP.
func (c *Conn) Transport() string {
	if c.opts.Type == TypeSSE || c.usesSSE() {
		return TypeSSE
	}
	return TypeHTTP
}
