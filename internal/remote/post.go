package remote

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// errorBodyLimit bounds how much of an error response is read.
const errorBodyLimit = 64 << 10

// WriteMessage sends msg: a request as a POST whose answer is read in the
// background, a notification or a response as a POST answered 202. In
// the modern era notifications/cancelled is not sent: the request's
// stream is closed, which is how HTTP cancels.
func (c *Conn) WriteMessage(ctx context.Context, msg []byte) error {
	if err := c.Err(); err != nil {
		return notSent(err)
	}
	m, err := inspect(msg)
	if err != nil {
		return fmt.Errorf("write to %q: not a JSON-RPC message: %w", c.opts.Name, err)
	}
	if c.usesSSE() {
		return c.postSSE(ctx, m, msg)
	}
	if m.method == "notifications/cancelled" {
		if s := c.cancelStream(m.cancelOf); s != nil && s.modern {
			return nil
		}
	}
	if m.id != nil && !m.response {
		return c.startRequest(m, msg)
	}
	return c.postNotification(ctx, m, msg)
}

// startRequest registers the request's stream and POSTs it from a
// goroutine of the Conn.
func (c *Conn) startRequest(m message, msg []byte) error {
	s := &stream{key: idKey(m.id), id: m.id, method: m.method, modern: m.version != ""}
	s.ctx, s.cancel = context.WithCancel(c.life)
	c.mu.Lock()
	if c.endErr != nil {
		c.mu.Unlock()
		s.cancel()
		return notSent(c.endErr)
	}
	if c.expiring {
		c.mu.Unlock()
		s.cancel()
		return fmt.Errorf("%w: %w", ErrClosed, c.notProcessed())
	}
	c.streams[s.key] = s
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		defer c.forget(s)
		c.request(s, m, msg)
	}()
	return nil
}

func (c *Conn) forget(s *stream) {
	s.cancel()
	c.mu.Lock()
	if c.streams[s.key] == s {
		delete(c.streams, s.key)
	}
	c.mu.Unlock()
	c.settle()
}

// cancelStream closes the stream of request id (mcpd cancelled it) and
// returns it; nil if there is none. A cancelled listen is closed for the
// session too, since nothing more can arrive on it.
func (c *Conn) cancelStream(id json.RawMessage) *stream {
	if len(id) == 0 {
		return nil
	}
	c.mu.Lock()
	s := c.streams[idKey(id)]
	c.mu.Unlock()
	if s == nil {
		return nil
	}
	s.cancelled.Store(true)
	s.cancel()
	return s
}

// request POSTs one request and reads its answer.
func (c *Conn) request(s *stream, m message, msg []byte) {
	resp, err := c.post(s.ctx, m, msg)
	s.answered.Store(true)
	c.settle()
	if err != nil {
		if s.cancelled.Load() || c.life.Err() != nil {
			return
		}
		c.failRequest(s, err)
		return
	}
	defer resp.Body.Close()
	if m.method == "initialize" && resp.StatusCode/100 == 2 {
		if sid := resp.Header.Get(hdrSessionID); sid != "" {
			c.mu.Lock()
			c.sessionID = sid
			c.mu.Unlock()
			c.event("session started")
		}
	}
	c.answer(s, m, msg, resp)
}

// failRequest handles a request that got no HTTP answer: the server is
// unreachable, which ends the Conn (every call in flight fails with the
// cause), except when mcpd is the one who gave up.
func (c *Conn) failRequest(s *stream, err error) {
	if isAuthCallError(err) {
		c.callError(s.id, err)
		return
	}
	c.fail(err)
}

// answer reads the HTTP answer of request s.
func (c *Conn) answer(s *stream, m message, msg []byte, resp *http.Response) {
	if s.method == "server/discover" {
		c.noteDiscover(isFallbackStatus(resp.StatusCode) && !c.hadSession(resp))
	}
	switch {
	case resp.StatusCode/100 == 2:
		c.success(s, m, resp)
	case resp.StatusCode == http.StatusNotFound && c.hadSession(resp):
		// This request was not processed and may be sent again; the
		// others the server took may have been, and fail with the session.
		c.callError(s.id, c.notProcessed())
		c.expire(s.method)
	default:
		c.httpError(s, m, msg, resp)
	}
}

// hadSession reports whether resp answers a request sent with a session id.
func (c *Conn) hadSession(resp *http.Response) bool {
	return resp.Request != nil && resp.Request.Header.Get(hdrSessionID) != ""
}

// success reads a 2xx answer: one JSON object, or an SSE stream.
func (c *Conn) success(s *stream, m message, resp *http.Response) {
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case ct == "text/event-stream":
		c.readStream(s, m, resp.Body)
	case resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusNoContent:
		c.callError(s.id, fmt.Errorf("server %q answered %s to %s, without a response", c.opts.Name, resp.Status, s.method))
	default:
		c.readJSON(s, m, resp)
	}
}

// readJSON reads a JSON answer, bounded by MaxMessageSize. A body that
// does not hold the request's response fails the request at once: nothing
// else will answer it.
func (c *Conn) readJSON(s *stream, m message, resp *http.Response) {
	b, err := io.ReadAll(io.LimitReader(resp.Body, int64(c.opts.MaxMessageSize)+1))
	switch {
	case err != nil:
		if !s.cancelled.Load() && c.life.Err() == nil {
			c.fail(fmt.Errorf("server %q: reading the answer to %s: %w", c.opts.Name, s.method, netError(err)))
		}
		return
	case len(b) > c.opts.MaxMessageSize:
		c.tooLarge(s, c.opts.MaxMessageSize, true) // all that is known: more than the limit
		return
	}
	b = bytes.TrimSpace(b)
	msgs := [][]byte{b}
	var batch []json.RawMessage
	if len(b) > 0 && b[0] == '[' && json.Unmarshal(b, &batch) == nil {
		msgs = msgs[:0]
		for _, e := range batch {
			msgs = append(msgs, e)
		}
	}
	answered := false
	for _, msg := range msgs {
		a, running := c.received(s, m, msg)
		if !running {
			return
		}
		answered = answered || a
	}
	if !answered && !s.cancelled.Load() {
		c.event("HTTP %s on %s without its response (%s)", resp.Status, s.method, bodyKind(b))
		c.callError(s.id, &HTTPError{Status: resp.StatusCode, Text: resp.Status, Method: s.method, Server: c.opts.Name,
			Missing: "without its response (" + bodyKind(b) + ")"})
	}
}

// bodyKind says what a JSON answer without the response held.
func bodyKind(b []byte) string {
	switch {
	case len(b) == 0:
		return "an empty body"
	case !jsonrpc.Valid(b):
		return "a body that is not JSON"
	default:
		return "no response with the request's id"
	}
}

// received delivers one message of request s's answer, noting what the
// Conn needs from it (the legacy version from initialize's result, the
// x-mcp-header annotations of a modern tools/list). A response to another
// request is discarded: on this stream it can only be the server's
// mistake, and delivered it could answer another call. It reports whether
// msg was s's response, and whether the Conn still runs.
func (c *Conn) received(s *stream, m message, msg []byte) (answered, running bool) {
	if !isObject(msg) {
		return false, c.deliver(msg) // counted and dropped
	}
	env, err := jsonrpc.DecodeEnvelope(msg)
	if err == nil && env.Method == "" {
		if len(env.ID) == 0 || string(env.ID) == "null" {
			rpc, ok := rpcErrorBody(msg, s.id) // an error the server could not tie to the request
			if !ok {
				c.skipped.Add(1)
				c.event("message without method or id on the stream of %s discarded", s.method)
				return false, true
			}
			msg = rpc
		} else if idKey(env.ID) != s.key {
			c.skipped.Add(1)
			c.warn("response to id %s on the stream of %s (id %s) discarded", snippet(env.ID), s.method, s.id)
			return false, true
		}
		answered = true
	}
	if answered && m.method == "initialize" {
		var r struct {
			Result struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
		}
		if json.Unmarshal(msg, &r) == nil && r.Result.ProtocolVersion != "" {
			c.mu.Lock()
			c.version = r.Result.ProtocolVersion
			c.mu.Unlock()
		}
	}
	if answered && s.modern && m.method == "tools/list" {
		msg = c.filterTools(msg)
	}
	return answered, c.deliver(msg)
}

// tooLarge fails request s whose answer was larger than MaxMessageSize.
func (c *Conn) tooLarge(s *stream, size int, atLeast bool) {
	c.oversize.Add(1)
	more := ""
	if atLeast {
		more = "more than "
	}
	c.event("answer to %s discarded: %s%d bytes, more than maxLineSize %d", s.method, more, size, c.opts.MaxMessageSize)
	c.callError(s.id, fmt.Errorf("%w: the response was %s%d bytes, the server's maxLineSize is %d bytes; "+
		"raise maxLineSize in the server's config to accept it", ErrResponseTooLarge, more, size, c.opts.MaxMessageSize))
}

// httpError handles a non-2xx answer to request s. A JSON-RPC error in
// the body is the answer (modern servers answer 400 and 404 so). A 5xx
// without one means the server is broken: the Conn fails. Other statuses
// fail the request; for server/discover they are delivered as a JSON-RPC
// error, so that era negotiation falls back to initialize.
func (c *Conn) httpError(s *stream, m message, msg []byte, resp *http.Response) {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	if rpc, ok := rpcErrorBody(b, s.id); ok {
		if s.method == "server/discover" {
			c.noteDiscover(false)
		}
		c.deliver(rpc)
		return
	}
	c.event("HTTP %s on %s", resp.Status, s.method)
	herr := &HTTPError{Status: resp.StatusCode, Text: resp.Status, Body: snippet(b), Method: s.method, Server: c.opts.Name}
	switch {
	case c.mayFallBack(s, resp.StatusCode): // fallback.go
		c.fallBack(s, m, msg, herr)
	case resp.StatusCode >= 500:
		c.fail(herr)
	case s.method == "server/discover":
		e, _ := json.Marshal(jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: herr.Error()})
		c.deliver(fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, s.id, e))
	default:
		c.callError(s.id, herr)
	}
}

// HTTPError is an HTTP answer that carried no JSON-RPC message.
type HTTPError struct {
	Status int
	Text   string // "500 Internal Server Error"
	Body   string // the start of the body, one line
	Method string
	Server string
	// Missing says what a 2xx answer lacked ("without its response").
	Missing string
}

func (e *HTTPError) Error() string {
	s := fmt.Sprintf("server %q answered HTTP %s to %s", e.Server, e.Text, e.Method)
	if e.Missing != "" {
		s += " " + e.Missing
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// snippet is the start of an error body on one line, for messages.
func snippet(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	if strings.HasPrefix(s, "<") { // an HTML page says nothing useful
		return ""
	}
	return strings.ToValidUTF8(s, "?")
}

// rpcErrorBody returns b as the JSON-RPC error response to id when it is
// one (its id set to id when the server left it null or out).
func rpcErrorBody(b []byte, id json.RawMessage) ([]byte, bool) {
	var e struct {
		ID    json.RawMessage `json:"id"`
		Error *jsonrpc.Error  `json:"error"`
	}
	if !isObject(b) || json.Unmarshal(b, &e) != nil || e.Error == nil {
		return nil, false
	}
	if len(e.ID) == 0 || string(e.ID) == "null" {
		enc, err := json.Marshal(e.Error)
		if err != nil {
			return nil, false
		}
		return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":%s}`, id, enc), true
	}
	return b, true
}

func idKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// postNotification POSTs a notification or a response, within ctx; the
// server accepts it with 202.
func (c *Conn) postNotification(ctx context.Context, m message, msg []byte) error {
	pctx, cancel := mergeCancel(ctx, c.life)
	defer cancel()
	resp, err := c.post(pctx, m, msg)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		drain(resp)
		if m.method == "notifications/initialized" {
			c.startGET()
		}
		return nil
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	what := m.method
	if m.response {
		what = "a response"
	}
	if resp.StatusCode == http.StatusNotFound && c.hadSession(resp) {
		c.expire(what)
	}
	c.event("HTTP %s on %s", resp.Status, what)
	return &HTTPError{Status: resp.StatusCode, Text: resp.Status, Body: snippet(b), Method: what, Server: c.opts.Name}
}

// post sends one POST of msg with the headers its era needs.
func (c *Conn) post(ctx context.Context, m message, msg []byte) (*http.Response, error) {
	build := func() (*http.Request, error) {
		req, err := c.newRequest(ctx, http.MethodPost, c.url.String(), msg)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		c.eraHeaders(req, m)
		return req, nil
	}
	return c.send(ctx, build)
}

// eraHeaders sets the MCP headers of m: the modern ones from its _meta,
// else the legacy session's.
func (c *Conn) eraHeaders(req *http.Request, m message) {
	if m.version != "" {
		req.Header.Set(hdrProtocolVersion, m.version)
		if m.method != "" && !m.response {
			req.Header.Set(hdrMethod, headerValue(m.method))
		}
		if m.name != "" {
			req.Header.Set(hdrName, headerValue(m.name))
		}
		c.setParamHeaders(req.Header, m)
		return
	}
	c.mu.Lock()
	sid, v := c.sessionID, c.version
	c.mu.Unlock()
	if m.method == "initialize" {
		return
	}
	if sid != "" {
		req.Header.Set(hdrSessionID, sid)
	}
	if v != "" {
		req.Header.Set(hdrProtocolVersion, v)
	}
}

// newRequest builds a request with the configured headers.
func (c *Conn) newRequest(ctx context.Context, method, target string, body []byte) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", c.opts.Name, err)
	}
	for k, v := range c.opts.Headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

// authError is a failure of the Authorizer or an authorization refusal.
type authError struct{ err error }

func (e *authError) Error() string { return e.err.Error() }
func (e *authError) Unwrap() error { return e.err }

// send runs build's request with the bearer token, and once more after
// the Authorizer fixed a 401 or 403. A 401 for the token the Authorizer
// just gave means a login is required: it is not told again, which could
// refresh once more for every request. Transport errors are said plainly
// (netError).
func (c *Conn) send(ctx context.Context, build func() (*http.Request, error)) (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		req, err := build()
		if err != nil {
			return nil, err
		}
		if err := authorize(ctx, c.opts.Authorizer, req); err != nil {
			return nil, &authError{fmt.Errorf("server %q: authorization: %w", c.opts.Name, err)}
		}
		resp, err := c.do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			return resp, nil
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
		c.event("HTTP %s on %s", resp.Status, req.Method)
		if c.opts.Authorizer == nil {
			return nil, &authError{fmt.Errorf("server %q: %w: HTTP %s%s; check the server's headers in the config",
				c.opts.Name, ErrUnauthorized, resp.Status, colon(snippet(b)))}
		}
		if attempt > 0 && resp.StatusCode == http.StatusUnauthorized {
			if r, ok := c.opts.Authorizer.(Refuser); ok {
				if err := r.Refused(ctx, resp); err != nil && !errors.Is(err, ErrLoginRequired) {
					return nil, &authError{fmt.Errorf("server %q: HTTP %s after a new token: %w: %w", c.opts.Name, resp.Status, ErrLoginRequired, err)}
				} else if err != nil {
					return nil, &authError{fmt.Errorf("server %q: HTTP %s after a new token: %w", c.opts.Name, resp.Status, err)}
				}
			}
			return nil, &authError{fmt.Errorf("server %q: HTTP %s after a new token: %w", c.opts.Name, resp.Status, ErrLoginRequired)}
		}
		if err := c.opts.Authorizer.OnUnauthorized(ctx, resp); err != nil {
			return nil, &authError{fmt.Errorf("server %q: HTTP %s: %w", c.opts.Name, resp.Status, err)}
		}
		if attempt > 0 {
			return nil, &authError{fmt.Errorf("server %q: %w: HTTP %s after a new token", c.opts.Name, ErrUnauthorized, resp.Status)}
		}
	}
}

func colon(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// do sends req on the pool, with transport errors said plainly.
func (c *Conn) do(req *http.Request) (*http.Response, error) {
	if !c.reached.Load() {
		req = req.WithContext(httptrace.WithClientTrace(req.Context(), c.trace))
	}
	resp, err := c.pool.client.Do(req)
	if err != nil {
		if ctx := req.Context(); ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		return nil, fmt.Errorf("server %q: %s %s: %w", c.opts.Name, req.Method, c.where, netError(err))
	}
	return resp, nil
}

// drain reads a little of an uninteresting body and closes it, so that
// the connection can be reused.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, errorBodyLimit))
	resp.Body.Close()
}

// mergeCancel returns a context ending with a or b.
func mergeCancel(a, b context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(a)
	stop := context.AfterFunc(b, func() { cancel(context.Cause(b)) })
	return ctx, func() { stop(); cancel(context.Canceled) }
}
