// Package session owns one MCP client session on a child's stdio: era
// negotiation (server/discover probe, initialize fallback), request ids,
// the pending map, deadlines and cancellation, progress-token rewriting, and
// the answers to the child's own requests.
package session

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
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

// Notification is a child notification not tied to a request of an app:
// list changes, resource updates, untagged log messages, listen
// acknowledgements.
type Notification struct {
	Method string
	// Params is the raw params object (may be nil).
	Params json.RawMessage
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
	// own json.Valid. Whoever changes them must keep this true or clear it.
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

		clientInfoValid: json.Valid(opts.ClientInfo),
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

// ---- handshake ----

// Handshake negotiates the era as design.md describes and returns what it
// learned. On a child that exits right after the probe it returns an error
// wrapping ErrExitedAfterProbe.
func (s *Session) Handshake(ctx context.Context) (Info, error) {
	var (
		info Info
		err  error
	)
	switch s.opts.Protocol {
	case ProtocolLegacy:
		info, err = s.initialize(ctx)
	case ProtocolModern:
		var legacy bool
		info, legacy, err = s.discover(ctx)
		switch {
		case err == nil && legacy:
			err = s.handshakeErrorf("server/discover failed and protocol is modern")
		case errors.Is(err, ErrClosed):
			err = s.handshakeErrorf("%w", err)
		}
	case ProtocolAuto:
		var legacy bool
		info, legacy, err = s.discover(ctx)
		if errors.Is(err, ErrClosed) && ctx.Err() == nil {
			// "A daemon can instead treat 'child exited right after the
			// probe' as 'legacy' and restart it straight into initialize."
			return Info{}, fmt.Errorf("%w: server %q: %w", ErrExitedAfterProbe, s.opts.Server, err)
		}
		if err == nil && legacy {
			info, err = s.initialize(ctx)
			if errors.Is(err, ErrClosed) && ctx.Err() == nil {
				return Info{}, fmt.Errorf("%w: server %q: %w", ErrExitedAfterProbe, s.opts.Server, err)
			}
		}
	default:
		return Info{}, s.handshakeErrorf("unknown protocol %q", s.opts.Protocol)
	}
	if err != nil {
		return Info{}, err
	}
	s.info.Store(&info)
	s.log.Debug("handshake done", zap.String("era", string(info.Era)), zap.String("protocol_version", info.ProtocolVersion))
	return info, nil
}

// discover sends the server/discover probe. It reports legacy=true when the
// answer says the child is not modern ("Any other error, or no answer within
// a reasonable timeout → server is legacy").
func (s *Session) discover(ctx context.Context) (info Info, legacy bool, err error) {
	version := jsonrpc.ModernVersion
	for attempt := 0; ; attempt++ {
		resp, err := s.probe(ctx, version)
		switch {
		case err != nil && ctx.Err() != nil:
			return Info{}, false, fmt.Errorf("server/discover: %w", ctx.Err())
		case errors.Is(err, context.DeadlineExceeded) && attempt > 0:
			// The child is modern (it sent -32022); no fallback.
			return Info{}, false, s.handshakeErrorf("discover with %s: %w", version, err)
		case errors.Is(err, context.DeadlineExceeded):
			s.log.Debug("discover probe timed out", zap.Duration("timeout", s.opts.DiscoverTimeout))
			return Info{}, true, nil
		case err != nil:
			return Info{}, false, fmt.Errorf("server/discover: %w", err)
		case resp.Error != nil && resp.Error.Code == jsonrpc.CodeUnsupportedProtocolVersion && attempt == 0:
			// "-32022 UnsupportedProtocolVersion → server is modern but not
			// at that version; retry with one of error.data.supported. Do
			// not fall back to initialize."
			var data struct {
				Supported []string `json:"supported"`
			}
			_ = json.Unmarshal(resp.Error.Data, &data)
			v, ok := pickModern(data.Supported)
			if !ok {
				return Info{}, false, s.handshakeErrorf("no mutually supported modern version in %q",
					data.Supported)
			}
			version = v
			continue
		case resp.Error != nil && resp.Error.Code == jsonrpc.CodeUnsupportedProtocolVersion:
			return Info{}, false, s.handshakeErrorf("discover with %s: %w", version, resp.Error)
		case resp.Error != nil && attempt > 0:
			return Info{}, false, s.handshakeErrorf("discover with %s: %w", version, resp.Error)
		case resp.Error != nil:
			s.log.Debug("discover probe rejected", zap.Int64("code", resp.Error.Code), zap.String("message", resp.Error.Message))
			return Info{}, true, nil
		}
		return s.discoverInfo(resp.Result, version)
	}
}

// probe sends one server/discover request with version in the envelope,
// bounded by the discover timeout. The probe is not cancelled on timeout: "a
// strict legacy server may dislike any pre-initialize traffic, so treat it
// as optional".
func (s *Session) probe(ctx context.Context, version string) (*Response, error) {
	pctx, cancel := context.WithTimeout(ctx, s.opts.DiscoverTimeout)
	defer cancel()
	params, err := s.stamp(nil, nil, version, nil, nil)
	if err != nil {
		return nil, err
	}
	return s.roundTrip(pctx, "server/discover", params, nil, false)
}

func (s *Session) discoverInfo(result json.RawMessage, requested string) (Info, bool, error) {
	var r struct {
		SupportedVersions []string                   `json:"supportedVersions"`
		Capabilities      json.RawMessage            `json:"capabilities"`
		Instructions      string                     `json:"instructions"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(result, &r); err != nil {
		return Info{}, false, s.handshakeErrorf("decode discover result: %w", err)
	}
	// "DiscoverResult → server is modern; choose a version from
	// supportedVersions that both support; stay modern."
	version := requested
	if !slices.Contains(r.SupportedVersions, requested) {
		v, ok := pickModern(r.SupportedVersions)
		if !ok && s.opts.Protocol == ProtocolAuto {
			// A server that answers discover but lists only legacy
			// versions (the Go SDK's stateful HTTP handler), or none (a
			// legacy server answering every unknown method with an empty
			// result), is legacy.
			s.log.Debug("discover lists no modern version; using initialize", zap.Strings("supported", r.SupportedVersions))
			return Info{}, true, nil
		}
		if !ok {
			return Info{}, false, s.handshakeErrorf("no mutually supported modern version in %q",
				r.SupportedVersions)
		}
		version = v
	}
	return Info{
		Era:               EraModern,
		ProtocolVersion:   version,
		ServerInfo:        r.Meta[jsonrpc.MetaServerInfo],
		Capabilities:      r.Capabilities,
		Instructions:      r.Instructions,
		SupportedVersions: r.SupportedVersions,
	}, false, nil
}

// pickModern returns jsonrpc.ModernVersion if listed, else the newest listed version
// not older than jsonrpc.ModernVersion (versions are ISO dates and compare
// lexicographically; "unknown later dates are treated as modern").
func pickModern(versions []string) (string, bool) {
	if slices.Contains(versions, jsonrpc.ModernVersion) {
		return jsonrpc.ModernVersion, true
	}
	best := ""
	for _, v := range versions {
		if v >= jsonrpc.ModernVersion && v > best {
			best = v
		}
	}
	return best, best != ""
}

// initialize runs the legacy handshake: initialize, then
// notifications/initialized. "Must be the first interaction; must not be
// cancelled": it is bounded by ctx but never followed by
// notifications/cancelled.
func (s *Session) initialize(ctx context.Context) (Info, error) {
	params, err := json.Marshal(map[string]json.RawMessage{
		"protocolVersion": json.RawMessage(strconv.Quote(jsonrpc.LegacyVersion)),
		"capabilities":    s.opts.Capabilities,
		"clientInfo":      s.opts.ClientInfo,
	})
	if err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	resp, err := s.roundTrip(ctx, "initialize", params, nil, false)
	if err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	if resp.Error != nil {
		return Info{}, s.handshakeErrorf("initialize: %w", resp.Error)
	}
	var r struct {
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      json.RawMessage `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	if err := json.Unmarshal(resp.Result, &r); err != nil {
		return Info{}, s.handshakeErrorf("decode initialize result: %w", err)
	}
	if r.ProtocolVersion == "" {
		return Info{}, s.handshakeErrorf("initialize result has no protocolVersion")
	}
	// "After a successful initialize result the client must send
	// notifications/initialized."
	if err := s.Notify(ctx, "notifications/initialized", nil); err != nil {
		return Info{}, fmt.Errorf("initialize: %w", err)
	}
	return Info{
		Era:             EraLegacy,
		ProtocolVersion: r.ProtocolVersion,
		ServerInfo:      r.ServerInfo,
		Capabilities:    r.Capabilities,
		Instructions:    r.Instructions,
	}, nil
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
	return s.send(ctx, method, msg, c, cancel)
}

// send is roundTrip for msg, the request already encoded under c.id.
func (s *Session) send(ctx context.Context, method string, msg []byte, c *call, cancel bool) (*Response, error) {
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

	if err := s.conn.WriteMessage(ctx, msg); err != nil {
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
	if cause := context.Cause(ctx); cause != nil {
		return cause.Error()
	}
	return context.Canceled.Error()
}

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

// ---- reader ----

func (s *Session) readLoop() {
	var err error
	for {
		var msg []byte
		msg, err = s.conn.ReadMessage()
		if err != nil {
			break
		}
		s.handle(msg)
	}
	s.shutdown(err)
}

// shutdown fails every pending call and later ones with an error wrapping
// ErrClosed, stops the child's request handlers and waits for them.
func (s *Session) shutdown(readErr error) {
	closed := fmt.Errorf("server %q: %w", s.opts.Server, ErrClosed)
	if hung := s.hung(); hung != nil {
		closed = fmt.Errorf("%w: %w", ErrClosed, hung)
	} else if readErr != nil && !errors.Is(readErr, io.EOF) {
		closed = fmt.Errorf("server %q: %w: %w", s.opts.Server, ErrClosed, readErr)
	}
	s.mu.Lock()
	s.closedErr = closed
	pending := s.pending
	s.pending = map[uint64]*call{}
	s.mu.Unlock()
	for _, c := range pending {
		c.ch <- outcome{err: fmt.Errorf("%s: %w", c.method, closed)}
	}
	s.closeListens(closed)
	s.log.Debug("session closed", zap.Int("failed_calls", len(pending)), zap.Error(readErr))
	s.stop()
	s.handlers.Wait()
	close(s.done)
}

func (s *Session) handle(msg []byte) {
	env, err := jsonrpc.DecodeEnvelope(msg) // no copy of params or result
	if err != nil {
		s.skipInvalid(msg, "invalid message skipped", zap.Error(err))
		return
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case env.Method != "" && hasID:
		s.serveRequest(env)
	case env.Method != "":
		s.notification(env)
	case hasID || env.Error != nil:
		s.response(env)
	default:
		s.skipInvalid(msg, "message without method, id or error skipped")
	}
}

// Invalid messages of one session logged at Warn, and how much of each;
// later ones are logged at Debug (a child that floods cannot flood the
// log) and Stats.MessagesInvalid keeps counting.
const (
	warnInvalidMessages = 20
	invalidPrefixLen    = 80
)

// skipInvalid counts and logs a message of the child that is JSON but not
// a valid JSON-RPC message.
func (s *Session) skipInvalid(msg []byte, what string, fields ...zap.Field) {
	n := s.invalid.Add(1)
	fields = append(fields, zap.ByteString("message_prefix", msg[:min(len(msg), invalidPrefixLen)]),
		zap.Int64("messages_invalid", n))
	if n <= warnInvalidMessages {
		s.log.Warn(what, fields...)
		return
	}
	s.log.Debug(what, fields...)
}

func (s *Session) response(env jsonrpc.Envelope) {
	if s.listenResponse(env) {
		return
	}
	c := s.takeCall(env.ID)
	if c == nil {
		// "The canceller should ignore any response that still arrives."
		s.dropped.Add(1)
		s.log.Debug("unsolicited response dropped", zap.ByteString("id", env.ID))
		return
	}
	resp := &Response{Result: env.Result, Error: env.Error}
	if resp.Error == nil && resp.Result == nil {
		resp.Result = json.RawMessage("null")
	}
	if resp.Error != nil {
		resp.Result = nil
	}
	c.ch <- outcome{resp: resp}
}

// takeCall removes the pending call whose id is the JSON value rawID from
// the pending map and returns it; nil if there is none.
func (s *Session) takeCall(rawID json.RawMessage) *call {
	id, err := strconv.ParseUint(string(rawID), 10, 64)
	if err != nil {
		return nil
	}
	return s.takeID(id)
}

func (s *Session) notification(env jsonrpc.Envelope) {
	if s.listenNotification(env) {
		return
	}
	switch env.Method {
	case "notifications/progress":
		s.progressNotification(env.Params)
		return
	case "notifications/message":
		if s.routeMessage(env.Params) {
			return
		}
	case "notifications/cancelled":
		// "when a child's id is referenced in a cancel from the server
		// (legacy), abort the local handler for that server→client request."
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(env.Params, &p) == nil && len(p.RequestID) > 0 {
			s.mu.Lock()
			in := s.incoming[idKey(p.RequestID)]
			s.mu.Unlock()
			if in != nil {
				in.cancel()
				return
			}
		}
	}
	if s.opts.OnNotification != nil {
		s.opts.OnNotification(Notification{Method: env.Method, Params: env.Params})
	}
}

// progressNotification maps the child-side token back to the app's and
// hands the params to that request's caller only.
func (s *Session) progressNotification(params json.RawMessage) {
	var top map[string]json.RawMessage
	if json.Unmarshal(params, &top) != nil {
		s.skipInvalid(params, "notifications/progress without an object as params skipped")
		return
	}
	var token string
	_ = json.Unmarshal(top["progressToken"], &token)
	s.mu.Lock()
	c := s.progress[token]
	s.mu.Unlock()
	if c == nil || c.onProgress == nil {
		s.log.Debug("progress for unknown token dropped", zap.String("token", token))
		return
	}
	top["progressToken"] = c.appToken
	b, err := json.Marshal(top)
	if err != nil {
		return
	}
	c.onProgress(b)
}

func idKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// serveRequest answers a request from the child: ping itself ("A legacy
// client must also answer server-sent pings"), others through OnRequest or
// -32601 ("answer any unexpected server request with -32601"). Answers are
// written from a goroutine owned by the session so the reader never blocks
// on the child's stdin.
func (s *Session) serveRequest(env jsonrpc.Envelope) {
	key := idKey(env.ID)
	ctx, cancel := context.WithCancel(s.lifetime)
	me := &incoming{cancel: cancel}
	s.mu.Lock()
	if prev := s.incoming[key]; prev != nil {
		prev.cancel() // a reused id replaces the older request
	}
	s.incoming[key] = me
	s.mu.Unlock()
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		defer func() {
			s.mu.Lock()
			if s.incoming[key] == me {
				delete(s.incoming, key)
			}
			s.mu.Unlock()
			cancel()
		}()
		var (
			result json.RawMessage
			rerr   *RPCError
		)
		switch {
		case env.Method == "ping":
			result = emptyObject
		case s.opts.OnRequest == nil:
			rerr = &RPCError{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
		default:
			result, rerr = s.opts.OnRequest(ctx, env.Method, env.Params)
		}
		if ctx.Err() != nil {
			// Cancelled by the child ("Receivers SHOULD NOT send a response
			// for the cancelled request") or the session ended.
			return
		}
		if err := s.answer(ctx, env.ID, result, rerr); err != nil {
			s.log.Debug("answer to server request failed", zap.String("method", env.Method), zap.Error(err))
		}
	}()
}

func (s *Session) answer(ctx context.Context, id json.RawMessage, result json.RawMessage, rerr *RPCError) error {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	if rerr != nil {
		e, err := json.Marshal(rerr)
		if err != nil {
			return err
		}
		b = append(append(b, `,"error":`...), e...)
	} else {
		if len(result) == 0 {
			result = emptyObject
		}
		b = append(append(b, `,"result":`...), result...)
	}
	return s.conn.WriteMessage(ctx, append(b, '}'))
}
