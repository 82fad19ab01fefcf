package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"sync/atomic"
)

// The 2024-11-05 HTTP+SSE transport: one GET stream carries everything
// the server sends; its first event, "endpoint", says where to POST.

// openSSE opens the event stream and waits, within ctx, for the endpoint
// event; a goroutine then delivers the stream's messages until it ends,
// which ends the Conn.
func (c *Conn) openSSE(ctx context.Context) error {
	// The stream lives as long as the Conn; only the wait for the endpoint
	// is bounded by ctx.
	stop := context.AfterFunc(ctx, func() { c.stop(fmt.Errorf("connect: %w", context.Cause(ctx))) })
	defer stop()
	resp, err := c.send(c.life, func() (*http.Request, error) {
		req, err := c.newRequest(c.life, http.MethodGet, c.url.String(), nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Accept", "text/event-stream")
		return req, nil
	})
	if err != nil {
		return err
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if resp.StatusCode/100 != 2 || ct != "text/event-stream" {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
		resp.Body.Close()
		return fmt.Errorf("server %q: GET %s answered HTTP %s%s, not an event stream", c.opts.Name, c.where, resp.Status, colon(snippet(b)))
	}
	r := newSSEReader(resp.Body, c.opts.MaxMessageSize)
	ep, err := c.endpointEvent(r)
	if err != nil {
		resp.Body.Close()
		return err
	}
	c.mu.Lock()
	c.endpoint = ep
	c.mu.Unlock()
	c.event("event stream opened")
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer resp.Body.Close()
		var last string
		err := c.readGET(r, &last)
		if c.life.Err() == nil {
			c.fail(fmt.Errorf("server %q: the event stream ended: %s", c.opts.Name, streamCause(err)))
		}
	}()
	return nil
}

// endpointEvent reads events until "endpoint" and resolves its URI
// against the stream's URL; it must be on the same origin.
func (c *Conn) endpointEvent(r *sseReader) (*url.URL, error) {
	for {
		ev, err := r.next()
		if err != nil {
			if cause := context.Cause(c.life); cause != nil {
				return nil, cause
			}
			return nil, fmt.Errorf("server %q: the event stream ended before its endpoint event: %s", c.opts.Name, streamCause(err))
		}
		if ev.Type != "endpoint" {
			continue
		}
		ep, err := c.url.Parse(strings.TrimSpace(string(ev.Data)))
		if err != nil {
			return nil, fmt.Errorf("server %q: invalid endpoint event: %w", c.opts.Name, err)
		}
		if ep.Scheme != c.url.Scheme || ep.Host != c.url.Host {
			return nil, fmt.Errorf("server %q: the endpoint event names another origin (%s)", c.opts.Name, redact(ep))
		}
		return ep, nil
	}
}

// postSSE POSTs msg to the endpoint within ctx; the answer, if any,
// arrives on the event stream. A request sent whole counts as written even
// when ctx ends before the server acknowledged it (a server may act on a
// request before it answers its POST): its POST then ends in the
// background, and the session, seeing ctx's end, cancels the request with
// notifications/cancelled.
func (c *Conn) postSSE(ctx context.Context, m message, msg []byte) error {
	actx, cancelAuth := mergeCancel(ctx, c.life)
	if m.id == nil || m.response {
		defer cancelAuth()
		return c.postToEndpoint(actx, actx, m, msg)
	}
	var written atomic.Bool
	trace := &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) { written.Store(i.Err == nil) }}
	rctx, cancelReq := context.WithCancelCause(httptrace.WithClientTrace(c.life, trace))
	c.mu.Lock()
	if c.endErr != nil {
		c.mu.Unlock()
		cancelAuth()
		cancelReq(nil)
		return fmt.Errorf("%w: %w", ErrClosed, c.endErr)
	}
	c.wg.Add(1)
	c.mu.Unlock()
	done := make(chan error, 1)
	go func() {
		defer c.wg.Done()
		defer cancelAuth()
		defer cancelReq(nil)
		done <- c.postToEndpoint(actx, rctx, m, msg)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if written.Load() {
		return nil
	}
	cancelReq(context.Cause(ctx))
	if err := <-done; err != nil && !written.Load() {
		return err
	}
	return nil
}

// postToEndpoint POSTs msg to the endpoint: the request within rctx, its
// authorization (and a retry after a 401) within actx.
func (c *Conn) postToEndpoint(actx, rctx context.Context, m message, msg []byte) error {
	c.mu.Lock()
	ep := c.endpoint
	c.mu.Unlock()
	resp, err := c.send(actx, func() (*http.Request, error) {
		req, err := c.newRequest(rctx, http.MethodPost, ep.String(), msg)
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	})
	if err != nil {
		if rctx.Err() == nil && !isAuthCallError(err) {
			c.fail(err)
		}
		return err
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errorBodyLimit))
	resp.Body.Close()
	if resp.StatusCode/100 == 2 {
		return nil
	}
	c.event("HTTP %s on %s", resp.Status, m.method)
	herr := &HTTPError{Status: resp.StatusCode, Text: resp.Status, Body: snippet(b), Method: m.method, Server: c.opts.Name}
	switch {
	case resp.StatusCode == http.StatusNotFound, resp.StatusCode >= 500:
		c.fail(herr) // the session is gone, or the server broken
	case m.id != nil && !m.response:
		c.callError(m.id, herr)
		return nil
	}
	return herr
}

// isAuthCallError reports whether err fails only this request (an
// Authorizer failure other than a login being required).
func isAuthCallError(err error) bool {
	var ae *authError
	return errors.As(err, &ae) && !errors.Is(err, ErrLoginRequired) && !errors.Is(err, ErrUnauthorized)
}
