package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"
)

// Resumption of a legacy stream: how many times in a row, and the wait
// when the server sent no retry field.
const (
	maxResumes     = 3
	defaultRetry   = 500 * time.Millisecond
	maxRetryWait   = 10 * time.Second
	getRestartWait = time.Second
	maxGETWait     = 30 * time.Second
)

// readStream reads the SSE answer of request s until its response; a
// stream that ends before it is resumed with Last-Event-ID when the server
// gave event ids (legacy), and is otherwise a lost connection. A listen's
// stream ending cleanly closes that listen.
func (c *Conn) readStream(s *stream, m message, body io.ReadCloser) {
	lastID := ""
	for resumes := 0; ; resumes++ {
		r := newSSEReader(body, c.opts.MaxMessageSize)
		answered, err := c.readEvents(s, m, r, &lastID)
		body.Close()
		listen := s.modern && m.method == "subscriptions/listen"
		switch {
		case answered || c.life.Err() != nil:
			return
		case listen && (s.cancelled.Load() || errors.Is(err, io.EOF)):
			// Nothing more can arrive on it: the listen is closed.
			if !s.cancelled.Load() {
				c.event("listen stream closed by the server")
			}
			c.deliver(fmt.Appendf(nil, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"stream closed"}}`, s.id))
			return
		case s.cancelled.Load():
			return
		}
		cause := streamCause(err)
		if s.modern || lastID == "" || resumes >= maxResumes {
			c.fail(fmt.Errorf("server %q: the response stream of %s ended before the response: %s", c.opts.Name, s.method, cause))
			return
		}
		c.event("response stream of %s ended (%s); resuming after event %q", s.method, cause, lastID)
		if !c.wait(s.ctx, retryWait(r.retry)) {
			return
		}
		next, err := c.resume(s.ctx, lastID)
		if err != nil {
			if !s.cancelled.Load() && c.life.Err() == nil {
				c.fail(fmt.Errorf("server %q: resuming the response stream of %s: %w", c.opts.Name, s.method, err))
			}
			return
		}
		body = next
	}
}

func streamCause(err error) string {
	if errors.Is(err, io.EOF) {
		return "the server closed it"
	}
	return netError(err).Error()
}

func retryWait(d time.Duration) time.Duration {
	if d <= 0 {
		return defaultRetry
	}
	return min(d, maxRetryWait)
}

// wait waits d or until ctx ends; it reports whether d passed.
func (c *Conn) wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// readEvents delivers the events of r until the response to s (answered)
// or the end of the stream (err). lastID follows the event ids.
func (c *Conn) readEvents(s *stream, m message, r *sseReader, lastID *string) (answered bool, err error) {
	for {
		ev, err := r.next()
		if err != nil {
			return false, err
		}
		if ev.HasID {
			*lastID = ev.ID
		}
		if ev.Type != "" && ev.Type != "message" {
			continue
		}
		if ev.Oversize {
			c.tooLarge(s, ev.Size, false)
			return true, nil // the response, most likely; nothing waits for more
		}
		if len(ev.Data) == 0 {
			continue // a priming event: only its id matters
		}
		answered, running := c.received(s, m, append([]byte(nil), ev.Data...))
		if answered || !running {
			return true, nil // "After the JSON-RPC response has been sent, the server SHOULD terminate the SSE stream."
		}
	}
}

// resume re-opens a legacy stream from lastID with GET.
func (c *Conn) resume(ctx context.Context, lastID string) (io.ReadCloser, error) {
	resp, err := c.get(ctx, lastID)
	if err != nil {
		return nil, err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 != 2 || ct != "text/event-stream" {
		drain(resp)
		if resp.StatusCode == http.StatusNotFound && c.hadSession(resp) {
			return nil, fmt.Errorf("%w (HTTP 404 Not Found)", ErrSessionExpired)
		}
		return nil, fmt.Errorf("HTTP %s", resp.Status)
	}
	return resp.Body, nil
}

// get sends a GET for the legacy session's stream.
func (c *Conn) get(ctx context.Context, lastID string) (*http.Response, error) {
	return c.send(ctx, func() (*http.Request, error) {
		req, err := c.newRequest(ctx, http.MethodGet, c.url.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		c.eraHeaders(req, message{method: "GET"})
		if lastID != "" {
			req.Header.Set(hdrLastEventID, lastID)
		}
		return req, nil
	})
}

// startGET opens the legacy GET stream once, after
// notifications/initialized: the server's notifications and requests that
// belong to no request arrive on it.
func (c *Conn) startGET() {
	c.mu.Lock()
	if c.getOpen || c.endErr != nil {
		c.mu.Unlock()
		return
	}
	c.getOpen = true
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.wg.Done()
		c.getLoop()
	}()
}

// getLoop keeps the GET stream open: a stream the server ends is
// re-opened (from the last event id, when it gave ids), as is one refused
// for a while (5xx, 429), with growing waits; a server that cannot be
// reached ends the Conn; 405 means it offers no such stream.
func (c *Conn) getLoop() {
	lastID := ""
	wait := time.Duration(0)
	for c.life.Err() == nil {
		if wait > 0 && !c.wait(c.life, wait) {
			return
		}
		resp, err := c.get(c.life, lastID)
		if err != nil {
			if c.life.Err() == nil {
				c.fail(fmt.Errorf("server %q: the event stream (GET): %w", c.opts.Name, err))
			}
			return
		}
		ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		switch {
		case resp.StatusCode == http.StatusNotFound && c.hadSession(resp):
			drain(resp)
			c.expire("the GET stream")
			return
		case resp.StatusCode/100 != 2 || ct != "text/event-stream":
			drain(resp)
			switch {
			case lastID != "" && resp.StatusCode == http.StatusBadRequest:
				lastID = "" // replay unsupported: open a fresh stream
				wait = getRestartWait
			case transientStatus(resp.StatusCode):
				// The server (or a proxy before it) is having a bad
				// moment: the session's notifications come back with it.
				wait = min(max(2*wait, getRestartWait), maxGETWait)
				c.event("event stream not available (GET: HTTP %s); trying again in %s", resp.Status, wait)
			default:
				c.event("no event stream (GET: HTTP %s)", resp.Status)
				return
			}
			continue
		}
		c.event("event stream opened")
		r := newSSEReader(resp.Body, c.opts.MaxMessageSize)
		err = c.readGET(r, &lastID)
		resp.Body.Close()
		if c.life.Err() != nil {
			return
		}
		c.event("event stream ended (%s); re-opening", streamCause(err))
		wait = retryWait(r.retry)
		if !errors.Is(err, io.EOF) {
			wait = 0 // a broken stream: check at once whether the server is there
		}
	}
}

// transientStatus reports whether an HTTP status refusing the GET stream
// may pass: a server error, 429 or 408. Anything else (405 above all)
// means the server offers no stream.
func transientStatus(code int) bool {
	return code >= 500 || code == http.StatusTooManyRequests || code == http.StatusRequestTimeout
}

// readGET delivers the events of the GET stream until it ends.
func (c *Conn) readGET(r *sseReader, lastID *string) error {
	for {
		ev, err := r.next()
		if err != nil {
			return err
		}
		if ev.HasID {
			*lastID = ev.ID
		}
		switch {
		case ev.Type != "" && ev.Type != "message":
		case ev.Oversize:
			c.oversize.Add(1)
			c.event("event of %d bytes discarded: more than maxLineSize %d", ev.Size, c.opts.MaxMessageSize)
		case len(ev.Data) > 0:
			if !c.deliver(append([]byte(nil), ev.Data...)) {
				return io.EOF
			}
		}
	}
}
