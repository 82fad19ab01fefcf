// Package session owns one MCP client session on a child's stdio: era
// negotiation (server/discover probe, initialize fallback), request ids,
// the pending map, deadlines and cancellation, progress-token rewriting, and
// the answers to the child's own requests.
package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"
)

// Protocol versions mcpd speaks.
const (
	ModernVersion = "2026-07-28"
	LegacyVersion = "2025-11-25"
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
)

// RPCError is a JSON-RPC error object received from the child.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("mcp error %d: %s", e.Code, e.Message) }

// Conn is the child's stdio as the session needs it; *transport.Process
// implements it. ReadMessage is called from the session's reader goroutine
// only.
type Conn interface {
	ReadMessage() ([]byte, error)
	WriteMessage(msg []byte) error
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
}

// Session is one MCP client session. All methods are safe for concurrent use.
type Session struct{}

// New starts a session on conn; its reader goroutine runs until conn's
// ReadMessage returns an error. Call Handshake before any Call.
func New(conn Conn, opts Options) *Session { panic("unimplemented") }

// Handshake negotiates the era as design.md describes and returns what it
// learned. On a child that exits right after the probe it returns an error
// wrapping ErrExitedAfterProbe.
func (s *Session) Handshake(ctx context.Context) (Info, error) { panic("unimplemented") }

// Info returns the negotiated info (zero before Handshake succeeded).
func (s *Session) Info() Info { panic("unimplemented") }

// Call sends req with a fresh id and waits for its response, ctx's end, or
// the child's exit. When ctx ends after the request was written, it sends
// notifications/cancelled for that id and returns ctx.Err(). When the child
// exits it returns an error wrapping ErrClosed at once.
func (s *Session) Call(ctx context.Context, req *Request) (*Response, error) {
	panic("unimplemented")
}

// Notify sends a notification to the child.
func (s *Session) Notify(method string, params json.RawMessage) error { panic("unimplemented") }

// Done is closed when the reader goroutine has ended (the child's stdout closed).
func (s *Session) Done() <-chan struct{} { panic("unimplemented") }

// Wait blocks until the reader goroutine has ended.
func (s *Session) Wait() { panic("unimplemented") }

// Stats returns the counters.
func (s *Session) Stats() Stats { panic("unimplemented") }
