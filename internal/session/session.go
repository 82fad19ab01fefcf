// Package session owns one MCP client session on a child's stdio: era
// negotiation (server/discover probe, initialize fallback), request ids,
// the pending map, deadlines and cancellation, progress-token rewriting, and
// the answers to the child's own requests.
package session

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Era is the protocol family a child speaks.
type Era string

const (
	EraModern Era = "modern"
	EraLegacy Era = "legacy"
)

// Protocol selects how the era is negotiated.
const (
	ProtocolAuto   = "auto"
	ProtocolModern = "modern"
	ProtocolLegacy = "legacy"
)

// DefaultDiscoverTimeout bounds the server/discover probe when
// Options.DiscoverTimeout is zero.
const DefaultDiscoverTimeout = 3 * time.Second

var (
	// ErrClosed means the child's stdout ended (it exited) while a request was
	// pending or before it was sent.
	ErrClosed = errors.New("session: server exited")
	// ErrExitedAfterProbe means the child exited right after the
	// server/discover probe: it is legacy, and must be restarted straight
	// into initialize.
	ErrExitedAfterProbe = errors.New("session: server exited after the discover probe")
	// ErrHandshake means era negotiation failed (modern required but not
	// offered, no mutual version, initialize rejected).
	ErrHandshake = errors.New("session: handshake failed")
	// ErrInvalidRequest means a request cannot be sent as the app gave it:
	// params that are not a JSON object, or a progress token that is
	// neither a string nor an integer.
	ErrInvalidRequest = errors.New("session: invalid request")
	// ErrResponseTooLarge means the child's response to a request was a
	// line longer than the server's maxLineSize, which the transport
	// discarded (oversize.go).
	ErrResponseTooLarge = errors.New("session: response larger than maxLineSize")
)

// RPCError is a JSON-RPC error object received from the child.
type RPCError = jsonrpc.Error

// Conn is the child's stdio as the session needs it; *transport.Process
// implements it. ReadMessage is called from the session's reader goroutine
// only. WriteMessage must be safe for concurrent use, never interleave
// messages, and return once ctx ends; it may keep msg (the session never
// reuses a message it wrote). A Conn that is also an
// OversizeReporter lets the session fail a request whose response was too
// large at once; one that is also a HungReporter lets it say why a child
// that stopped reading its stdin went away (write.go).
type Conn interface {
	ReadMessage() ([]byte, error)
	WriteMessage(ctx context.Context, msg []byte) error
}

// PartsWriter is implemented by a Conn that writes a message given as
// parts to concatenate (*transport.Process does), with WriteMessage's
// contract: a request whose params are large is then written without
// copying them into one buffer first.
type PartsWriter interface {
	WriteMessageParts(ctx context.Context, parts [][]byte) error
}

// writeParts writes the message that is the concatenation of parts.
func (s *Session) writeParts(ctx context.Context, parts [][]byte) error {
	if len(parts) == 1 {
		return s.conn.WriteMessage(ctx, parts[0])
	}
	if pw, ok := s.conn.(PartsWriter); ok {
		return pw.WriteMessageParts(ctx, parts)
	}
	return s.conn.WriteMessage(ctx, joinParts(parts))
}

// Notification is a child notification not tied to a request of an app:
// list changes, resource updates, untagged log messages, listen
// acknowledgements.
type Notification struct {
	Method string
	// Params is the raw params object (may be nil).
	Params json.RawMessage
	// DuringCalls marks a notifications/message sent while calls were in
	// flight, none of which it could be given to: it may be of one of them.
	DuringCalls bool
}

// RequestHandler answers a request the child sent (other than ping, which the
// session answers itself). Returning a non-nil *RPCError sends that error.
type RequestHandler func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *RPCError)

// Options configure a session.
type Options struct {
	// Server is the server name, used in errors and logs.
	Server string
	// Protocol is ProtocolAuto (default when empty), ProtocolModern or
	// ProtocolLegacy. The supervisor passes a remembered verdict here.
	Protocol string
	// DiscoverTimeout bounds the probe. If zero, DefaultDiscoverTimeout.
	DiscoverTimeout time.Duration
	// ClientInfo is mcpd's Implementation object, e.g. {"name":"mcpd","version":"..."}.
	ClientInfo json.RawMessage
	// Capabilities is what mcpd declares to a legacy child at initialize; nil means {}.
	Capabilities json.RawMessage
	// OnNotification receives notifications not routed to a request. It is
	// called on the reader goroutine and must not block.
	OnNotification func(Notification)
	// OnStrayNotification receives the notifications tagged with a listen
	// that has ended (forgotten, or closed by the server): they are
	// delivered to no one, but the child still announced something, so a
	// cache must still drop what they change. It is called on the reader
	// goroutine, before the next message is read, and must not block.
	OnStrayNotification func(Notification)
	// OnRequest answers the child's requests; nil answers -32601.
	OnRequest RequestHandler
	// Logger may be nil.
	Logger *zap.Logger
}

// Info is what negotiation learned about the child.
type Info struct {
	Era             Era
	ProtocolVersion string
	// ServerInfo is the child's Implementation object.
	ServerInfo json.RawMessage
	// Capabilities is the child's ServerCapabilities object.
	Capabilities json.RawMessage
	Instructions string
	// SupportedVersions is the modern discover result's list (modern only).
	SupportedVersions []string
}

// Request is one app request to forward to the child.
type Request struct {
	Method string
	// Params is the app's params object (nil means none). The session never
	// forwards the app's JSON-RPC id; it rewrites _meta.progressToken to a
	// token unique on this child, and for a modern child stamps the
	// io.modelcontextprotocol/ envelope keys into _meta.
	Params json.RawMessage
	// Arguments, when not nil, is the params' "arguments" member (a
	// tools/call's arguments object), which Params then lacks: it is
	// written after Params' members, in place. An app's arguments, which
	// may be tens of MiB, reach the child without being copied into
	// Params first.
	Arguments json.RawMessage
	// ClientInfo is the calling app's Implementation (modern _meta); nil means mcpd's.
	ClientInfo json.RawMessage
	// ClientCapabilities is what the calling app can answer; nil means {}.
	ClientCapabilities json.RawMessage
	// OnProgress receives notifications/progress params for this request with
	// the app's own token restored. It runs on the reader goroutine and must not block.
	OnProgress func(params json.RawMessage)
	// OnMessage receives the notifications/message params the child sent for
	// this request, when the request opted in with
	// _meta["io.modelcontextprotocol/logLevel"] and the message can be
	// attributed to it (messages.go). It runs on the reader goroutine and
	// must not block.
	OnMessage func(params json.RawMessage)
	// Validated says Params, ClientInfo and ClientCapabilities are each
	// nil or one valid JSON object, as checked once where the request
	// entered the daemon: the supervisor and the session then skip their
	// own jsonrpc.Valid. Whoever changes them must keep this true or clear it.
	Validated bool
}

// Response is the child's answer: exactly one of Result and Error is set.
type Response struct {
	Result json.RawMessage
	Error  *RPCError
}

// Stats are the session's counters.
type Stats struct {
	InFlight int64
	// ResponsesDropped counts late or unsolicited responses.
	ResponsesDropped int64
	// MessagesInvalid counts messages that were neither a request, a
	// notification nor a response.
	MessagesInvalid int64
}

// DefaultClientInfo is sent as mcpd's Implementation when
// Options.ClientInfo is nil.
var DefaultClientInfo = json.RawMessage(`{"name":"mcpd","version":"devel"}`)

// tokenSeq makes progress tokens unique across all sessions of the daemon.
var tokenSeq atomic.Uint64

var emptyObject = json.RawMessage("{}")

// Session is one MCP client session. All methods are safe for concurrent use.
type Session struct {
	conn Conn
	opts Options
	log  *zap.Logger

	nextID   atomic.Uint64
	info     atomic.Pointer[Info]
	dropped  atomic.Int64
	invalid  atomic.Int64
	lifetime context.Context // cancelled when the reader ends
	stop     context.CancelFunc
	handlers sync.WaitGroup // server→client request handlers; Add only on the reader goroutine
	done     chan struct{}
	// clientInfoValid is whether opts.ClientInfo is valid JSON, checked once.
	clientInfoValid bool

	mu        sync.Mutex // guards the fields below
	closedErr error      // set once the reader ended
	failErr   error      // set by FailCalls: later calls fail with it (fail.go)
	pending   map[uint64]*call
	progress  map[string]*call     // child-side progress token → call
	incoming  map[string]*incoming // child's request id → its handler
	listens   listenTable          // open subscriptions/listen requests (listen.go)
}

// call is one request waiting for its response.
type call struct {
	id         uint64
	method     string
	ch         chan outcome // buffered 1; exactly one send, by whoever removes the call from pending
	token      string       // child-side progress token, "" if none
	appToken   json.RawMessage
	onProgress func(json.RawMessage)
	onMessage  func(json.RawMessage) // nil unless the request opted in to log messages
}

// incoming is one request of the child being answered.
type incoming struct {
	cancel context.CancelFunc
}

type outcome struct {
	resp *Response
	err  error
}

// New starts a session on conn; its reader goroutine runs until conn's
// ReadMessage returns an error. Call Handshake before any Call.
func New(conn Conn, opts Options) *Session {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.Protocol == "" {
		opts.Protocol = ProtocolAuto
	}
	if opts.DiscoverTimeout <= 0 {
		opts.DiscoverTimeout = DefaultDiscoverTimeout
	}
	if opts.ClientInfo == nil {
		opts.ClientInfo = DefaultClientInfo
	}
	if opts.Capabilities == nil {
		opts.Capabilities = emptyObject
	}
	lifetime, stop := context.WithCancel(context.Background())
	s := &Session{
		conn:     conn,
		opts:     opts,
		log:      opts.Logger.With(zap.String("server", opts.Server)),
		lifetime: lifetime,
		stop:     stop,
		done:     make(chan struct{}),
		pending:  map[uint64]*call{},
		progress: map[string]*call{},
		incoming: map[string]*incoming{},

		clientInfoValid: jsonrpc.Valid(opts.ClientInfo),
	}
	if r, ok := conn.(OversizeReporter); ok {
		r.OnOversize(s.oversize) // before the reader starts
	}
	if r, ok := conn.(CallErrorReporter); ok {
		r.OnCallError(s.callError)
	}
	go s.readLoop()
	return s
}

// Info returns the negotiated info (zero before Handshake succeeded).
func (s *Session) Info() Info {
	if p := s.info.Load(); p != nil {
		return *p
	}
	return Info{}
}

// Done is closed when the reader goroutine has ended (the child's stdout
// closed) and every handler of the child's requests has returned.
func (s *Session) Done() <-chan struct{} { return s.done }

// Wait blocks until the reader goroutine has ended. OnRequest handlers must
// return once their ctx is cancelled, or Wait blocks on them.
func (s *Session) Wait() { <-s.done }

// Stats returns the counters.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	n := len(s.pending)
	s.mu.Unlock()
	return Stats{InFlight: int64(n), ResponsesDropped: s.dropped.Load(), MessagesInvalid: s.invalid.Load()}
}

// ---- requests ----

// Call sends req with a fresh id and waits for its response, ctx's end, or
// the child's exit. When ctx ends after the request was written, it sends
// notifications/cancelled for that id and returns ctx.Err(). When the child
// exits it returns an error wrapping ErrClosed at once.
func (s *Session) Call(ctx context.Context, req *Request) (*Response, error) {
	info := s.info.Load()
	modern := info != nil && info.Era == EraModern
	version := ""
	if modern {
		version = info.ProtocolVersion
	}
	c := &call{onProgress: req.OnProgress, onMessage: messageHandler(req)}
	c.id = s.nextID.Add(1)
	msg, err := s.encodeCall(c.id, req, version, c)
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", req.Method, s.opts.Server, err)
	}
	// "the client must never cancel initialize"
	return s.send(ctx, req.Method, msg, c, req.Method != "initialize")
}

// roundTrip registers a call under a fresh id, writes the request, and
// waits. c carries the progress routing (may be nil). When cancel is true
// and ctx ends after the write, notifications/cancelled is sent.
func (s *Session) roundTrip(ctx context.Context, method string, params json.RawMessage, c *call, cancel bool) (*Response, error) {
	if c == nil {
		c = &call{}
	}
	c.id = s.nextID.Add(1)
	msg, err := encodeRequest(c.id, method, params)
	if err != nil {
		return nil, fmt.Errorf("%s %q: encode: %w", method, s.opts.Server, err)
	}
	return s.send(ctx, method, [][]byte{msg}, c, cancel)
}

// send is roundTrip for msg, the request already encoded under c.id, as
// the parts to write in order (encodeCall).
func (s *Session) send(ctx context.Context, method string, msg [][]byte, c *call, cancel bool) (*Response, error) {
	c.method = method
	c.ch = make(chan outcome, 1)
	if err := ctx.Err(); err != nil {
		return nil, err // never written, so nothing to cancel
	}

	s.mu.Lock()
	if err := cmp.Or(s.closedErr, s.failErr); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	s.pending[c.id] = c
	if c.token != "" {
		s.progress[c.token] = c
	}
	s.mu.Unlock()
	defer s.forgetProgress(c)

	if err := s.writeParts(ctx, msg); err != nil {
		if s.take(c.id) {
			// Not written whole (a half-written request is completed by
			// the Conn, but nobody waits for its answer): nothing to cancel.
			return nil, s.failedWrite(ctx, err)
		}
		// The reader failed the call concurrently; report its error.
		o := <-c.ch
		return o.resp, o.err
	}

	select {
	case o := <-c.ch:
		return o.resp, o.err
	case <-ctx.Done():
	}
	if !s.take(c.id) {
		o := <-c.ch // answered (or failed) just now
		return o.resp, o.err
	}
	if cancel {
		// "on deadline or when the calling app goes away, mcpd sends
		// notifications/cancelled for the id it wrote"
		p, _ := json.Marshal(struct {
			RequestID uint64 `json:"requestId"`
			Reason    string `json:"reason"`
		}{c.id, cancelReason(ctx)})
		s.sendCancel(c.id, p) // best effort, bounded (write.go)
	}
	return nil, ctx.Err()
}

// cancelReason is the reason notifications/cancelled gives for ctx's end.
// A deadline that has passed is named as such even when the context was
// cancelled first (gRPC cancels a call whose app-side deadline fired before
// the daemon's own timer did); a cancellation with a cause gives the cause.
func cancelReason(ctx context.Context) string {
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded.Error()
	}
	if cause := context.Cause(ctx); cause != nil && cause != context.Canceled { //nolint:errorlint // a bare cancel has itself as cause
		return cause.Error()
	}
	return reasonCallerCancelled
}

// reasonCallerCancelled is the reason of a call whose context was
// cancelled without a cause: its app or host cancelled it or went away.
const reasonCallerCancelled = "the client cancelled the request or went away"

// take removes id from the pending map and reports whether it was there.
func (s *Session) take(id uint64) bool { return s.takeID(id) != nil }

// takeID removes the pending call id from the pending map and returns it;
// nil if there is none.
func (s *Session) takeID(id uint64) *call {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.pending[id]
	delete(s.pending, id)
	return c
}

func (s *Session) forgetProgress(c *call) {
	if c.token == "" {
		return
	}
	s.mu.Lock()
	delete(s.progress, c.token)
	s.mu.Unlock()
}

// Sizes for encoding a request in one allocation: the JSON-RPC members
// around method and params (id included), and the modern envelope's keys.
const (
	requestHeadSize = 64
	envelopeSize    = 160
)

// paramsKey introduces the params member of a request.
const paramsKey = `,"params":`

func encodeRequest(id uint64, method string, params json.RawMessage) ([]byte, error) {
	b, err := appendRequestHead(make([]byte, 0, requestHeadSize+len(method)+len(params)), id, method)
	if err != nil {
		return nil, err
	}
	if params != nil {
		b = append(b, paramsKey...)
		b = append(b, params...)
	}
	return append(b, '}'), nil
}

// appendRequestHead appends a request's members up to its method:
// {"jsonrpc":"2.0","id":ID,"method":METHOD (the caller closes the object).
func appendRequestHead(b []byte, id uint64, method string) ([]byte, error) {
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendUint(b, id, 10)
	b = append(b, `,"method":`...)
	return jsonrpc.AppendString(b, method)
}
