// Package remote is mcpd's client transport for remote MCP servers: the
// Streamable HTTP transport of both eras (2025-11-25 sessions with
// Mcp-Session-Id, the GET stream, resumption and DELETE; 2026-07-28
// stateless POSTs with Mcp-Method/Mcp-Name headers and long listen
// streams) and the 2024-11-05 HTTP+SSE transport. A Conn carries whole
// JSON-RPC messages, as a child's stdio does (session.Conn): every message
// written becomes an HTTP request, and everything the server sends back
// (JSON bodies, the events of every SSE stream) is queued for ReadMessage,
// so that era negotiation, ids, cancellation and everything above the
// session work as they do for a child.
package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// Transport types of Options.Type.
const (
	TypeHTTP = "http" // Streamable HTTP (both eras)
	TypeSSE  = "sse"  // the 2024-11-05 HTTP+SSE transport
)

// Defaults used when the matching Options field is zero.
const (
	DefaultMaxMessageSize = 32 << 20
	DefaultShutdownGrace  = 2 * time.Second
)

// inboxSize is how many received messages wait for ReadMessage before the
// streams delivering them are held back.
const inboxSize = 64

// Options configure a Conn.
type Options struct {
	// Name is the server's name, for errors and logs.
	Name string
	// URL is the MCP endpoint (http or https); for TypeSSE, the SSE URL.
	URL string
	// Type is TypeHTTP (default when empty) or TypeSSE. A TypeHTTP Conn
	// falls back to HTTP+SSE when the server answers as an old one
	// (fallback.go); Transport says which it speaks.
	Type string
	// Headers are sent with every request. Their values are secrets: they
	// are never logged nor put in errors.
	Headers map[string]string
	// Authorizer, if set, supplies the bearer token (auth.go).
	Authorizer Authorizer
	// MaxMessageSize bounds one message (a JSON body or one SSE event's
	// data). If zero, DefaultMaxMessageSize.
	MaxMessageSize int
	// ShutdownGrace bounds the DELETE that ends a legacy session at Stop.
	ShutdownGrace time.Duration
	// Pool is the server's HTTP connection pool; nil gives the Conn a pool
	// of its own, closed with it.
	Pool *Pool
	// Events, if set, receives a line per transport event (connected,
	// session started, stream lost, HTTP errors): what `mcpdctl logs`
	// shows for a server without stderr.
	Events *transport.Ring
	// Logger may be nil.
	Logger *zap.Logger
}

// Pool is one server's HTTP connection pool, kept across reconnects.
type Pool struct {
	client *http.Client
}

// NewPool returns a pool with Go's default dialing, TLS and proxy
// settings and no overall request timeout (streams are long-lived; each
// request is bounded by its context).
func NewPool() *Pool {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 16
	return &Pool{client: &http.Client{Transport: tr}}
}

// Close closes the pool's idle connections.
func (p *Pool) Close() { p.client.CloseIdleConnections() }

// Conn is one connection to a remote server: a legacy session, a run of
// stateless modern requests, or an HTTP+SSE stream. ReadMessage must be
// called from one goroutine; every other method is safe for concurrent use.
type Conn struct {
	opts    Options
	url     *url.URL
	where   string // the URL without query and credentials, for messages
	pool    *Pool
	ownPool bool
	log     *zap.Logger

	inbox   chan []byte
	life    context.Context // cancelled when the Conn ends
	stop    context.CancelCauseFunc
	ended   chan struct{} // closed when the Conn ends
	endOnce sync.Once
	done    chan struct{} // closed once every goroutine has returned
	wg      sync.WaitGroup

	onCallError func(id json.RawMessage, err error) // set before use (OnCallError)
	settled     chan struct{}                       // a request got its HTTP answer (expire.go)
	trace       *httptrace.ClientTrace              // every request's: sets reached
	reached     atomic.Bool                         // a connection to the server was made
	oversize    atomic.Int64
	skipped     atomic.Int64

	mu        sync.Mutex // guards the fields below
	endErr    error      // why the Conn ended (nil: not ended)
	sessionID string     // legacy Mcp-Session-Id
	version   string     // negotiated legacy protocol version
	streams   map[string]*stream
	getOpen   bool     // the legacy GET stream was started
	expiring  bool     // the session expired; the Conn ends soon (expire.go)
	endpoint  *url.URL // HTTP+SSE: where messages are POSTed
	// discoverAnswered: server/discover got an answer other than a
	// fallback status without JSON-RPC (fallback.go).
	discoverAnswered bool
	triedFallback    bool // the HTTP+SSE fallback was tried (fallback.go)
	// paramHeaders are the valid x-mcp-header annotations of the tools
	// the server listed (modern), by tool name.
	paramHeaders map[string][]paramHeader
}

// stream is one request waiting for its answer on its POST's response.
type stream struct {
	key    string
	id     json.RawMessage
	method string
	modern bool
	ctx    context.Context
	cancel context.CancelFunc
	// cancelled: mcpd cancelled the request; its stream ending is expected.
	cancelled atomic.Bool
	// answered: the HTTP answer (its status) arrived, or none will.
	answered atomic.Bool
}

// Dial returns a Conn to the server opts describe. For TypeHTTP nothing is
// sent yet (the first message opens the first connection); for TypeSSE it
// opens the event stream and waits, within ctx, for the endpoint event.
func Dial(ctx context.Context, opts Options) (*Conn, error) {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("connect %q: invalid URL: want http:// or https://", opts.Name)
	}
	if opts.Type == "" {
		opts.Type = TypeHTTP
	}
	if opts.MaxMessageSize <= 0 {
		opts.MaxMessageSize = DefaultMaxMessageSize
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = DefaultShutdownGrace
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	c := &Conn{
		opts:    opts,
		url:     u,
		where:   redact(u),
		pool:    opts.Pool,
		log:     opts.Logger.With(zap.String("server", opts.Name)),
		inbox:   make(chan []byte, inboxSize),
		ended:   make(chan struct{}),
		done:    make(chan struct{}),
		streams: map[string]*stream{},
		settled: make(chan struct{}, 1),
	}
	if c.pool == nil {
		c.pool, c.ownPool = NewPool(), true
	}
	c.trace = &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { c.reached.Store(true) }}
	c.life, c.stop = context.WithCancelCause(context.Background())
	c.event("connecting to %s (%s)", c.where, opts.Type)
	if opts.Type == TypeSSE {
		if err := c.openSSE(ctx); err != nil {
			if cte := c.ConnectTimedOut(); cte != nil && ctx.Err() != nil {
				err = cte // a connect that hung until ctx's deadline
			}
			c.end(err)
			<-c.done
			return nil, err
		}
	}
	return c, nil
}

// redact renders u without user info, query and fragment: they may carry
// credentials.
func redact(u *url.URL) string {
	v := *u
	v.User, v.RawQuery, v.Fragment, v.RawFragment = nil, "", "", ""
	return v.String()
}

// event records a transport event in the server's log ring and at debug
// level in mcpd's log.
func (c *Conn) event(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	c.log.Debug("remote: " + text)
	c.addEvent(text)
}

// warn is event at warning level.
func (c *Conn) warn(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	c.log.Warn("remote: " + text)
	c.addEvent(text)
}

func (c *Conn) addEvent(text string) {
	if c.opts.Events != nil {
		c.opts.Events.Add(transport.Line{Time: time.Now(), Text: "mcpd: " + text})
	}
}

// OnCallError registers the handler of requests that failed without an
// answer from the server (an HTTP error status, an oversize response): the
// session fails that request with err at once. Call it before the first
// WriteMessage.
func (c *Conn) OnCallError(f func(id json.RawMessage, err error)) { c.onCallError = f }

func (c *Conn) callError(id json.RawMessage, err error) {
	if c.onCallError != nil {
		c.onCallError(id, err)
	}
}

// ReadMessage returns the next message the server sent; once the Conn
// has ended and every message received before has been read, it returns
// io.EOF after Close, or the error that ended it.
func (c *Conn) ReadMessage() ([]byte, error) {
	select {
	case m := <-c.inbox:
		return m, nil
	case <-c.ended:
	}
	select {
	case m := <-c.inbox:
		return m, nil
	default:
	}
	return nil, c.Err()
}

// Err is why the Conn ended: io.EOF after Stop or Kill, the failure
// otherwise; nil while it runs.
func (c *Conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.endErr
}

// deliver queues msg for ReadMessage; it reports false once the Conn has
// ended. Messages that are not a JSON object are counted and dropped.
func (c *Conn) deliver(msg []byte) bool {
	if !isObject(msg) {
		n := c.skipped.Add(1)
		c.log.Debug("remote: message that is not a JSON object skipped", zap.Int64("skipped", n))
		return true
	}
	select {
	case c.inbox <- msg:
		return true
	case <-c.life.Done():
		return false
	}
}

func isObject(b []byte) bool {
	i := jsonrpc.SkipSpace(b, 0)
	return i < len(b) && b[i] == '{' && jsonrpc.Valid(b)
}

// fail ends the Conn with err (the first failure wins) and records it.
func (c *Conn) fail(err error) {
	if c.end(err) {
		c.event("connection lost: %v", err)
		c.log.Warn("remote server connection lost", zap.Error(err))
	}
}

// end ends the Conn with err once: every request and stream is cancelled,
// ReadMessage returns err after the queued messages, and done closes when
// every goroutine has returned.
func (c *Conn) end(err error) bool {
	first := false
	c.endOnce.Do(func() {
		first = true
		c.mu.Lock()
		c.endErr = err
		c.mu.Unlock()
		c.stop(err)
		close(c.ended)
		go func() {
			c.wg.Wait()
			if c.ownPool {
				c.pool.Close()
			}
			close(c.done)
		}()
	})
	return first
}

// Done is closed when the Conn has ended and its goroutines have returned.
func (c *Conn) Done() <-chan struct{} { return c.done }

// ExitError is why the Conn ended: nil after Stop or Kill.
func (c *Conn) ExitError() error {
	if err := c.Err(); err != io.EOF { //nolint:errorlint // io.EOF itself marks mcpd's close
		return err
	}
	return nil
}

// Stop ends the Conn as mcpd shuts a server down: a legacy session is
// ended with DELETE (bounded by ShutdownGrace; a 405 is fine), then every
// stream is closed.
func (c *Conn) Stop() error {
	c.mu.Lock()
	sid := c.sessionID
	c.mu.Unlock()
	var err error
	if sid != "" && c.Err() == nil {
		err = c.deleteSession(sid)
	}
	if c.end(io.EOF) {
		c.event("closed")
	}
	<-c.done
	return err
}

// Kill ends the Conn at once, without ending the server's session.
func (c *Conn) Kill() {
	c.end(io.EOF)
}

// Pid is 0: there is no process.
func (c *Conn) Pid() int { return 0 }

// Hung is nil: a remote server cannot block mcpd's writes (each request
// has its own deadline).
func (c *Conn) Hung() error { return nil }

// Stats counts the messages dropped: not JSON objects (LinesSkipped) and
// larger than MaxMessageSize (LinesOversize).
func (c *Conn) Stats() transport.Stats {
	return transport.Stats{LinesSkipped: c.skipped.Load(), LinesOversize: c.oversize.Load()}
}

// URL is the server's URL without its query and credentials.
func (c *Conn) URL() string { return c.where }

func (c *Conn) deleteSession(sid string) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ShutdownGrace)
	defer cancel()
	req, err := c.newRequest(ctx, http.MethodDelete, c.url.String(), nil)
	if err != nil {
		return err
	}
	req.Header.Set(hdrSessionID, sid)
	c.mu.Lock()
	if c.version != "" {
		req.Header.Set(hdrProtocolVersion, c.version)
	}
	c.mu.Unlock()
	resp, err := c.do(req)
	if err != nil {
		return fmt.Errorf("end session of %q: %w", c.opts.Name, err)
	}
	drain(resp)
	c.event("session ended (DELETE: %s)", resp.Status)
	return nil
}

// Redact renders a URL without user info, query and fragment (they may
// carry credentials), for status and logs; "" if it does not parse.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return redact(u)
}
