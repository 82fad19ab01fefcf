package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// DefaultMaxLine is the default largest line accepted from the host: the
// daemon's default maxLineSize (32 MiB).
const DefaultMaxLine = 32 << 20

// Options configure a bridge.
type Options struct {
	Names   []string      // servers to serve, in order
	All     bool          // serve every enabled server (Names empty)
	Timeout time.Duration // per forwarded request; 0 means none
	MaxLine int           // largest line accepted from the host, in bytes

	// Warnf reports what the operator should know (never to the host).
	Warnf func(format string, args ...any)
	// RPCError turns a failed RPC at start-up into the error the bridge
	// fails with.
	RPCError func(ctx context.Context, err error, server string) error
	// CallOptions are the options sent with every MCP RPC.
	CallOptions func() service.Options
	// Profile is the profile of the config every call is made under ("":
	// none); mcpd then serves only its servers and items.
	Profile string
	// Prefix is how tools and prompts of several servers are named: ""
	// takes the profile's setting (PrefixAlways without a profile).
	Prefix profile.Prefix
	// StartWait is how long after the bridge started a request that needs
	// mcpd waits for it while it is not running, rather than failing at
	// once: a host launched just before mcpd (at login) gets its answers
	// once mcpd runs. Zero: no wait.
	StartWait time.Duration
	// Root is the workspace root, an absolute directory, every call is
	// made in ("": none): a server with share "root" runs its instance for
	// it (WithRoot).
	Root string
	// Name is the bridge's serverInfo name when it serves several servers
	// ("": DefaultName).
	Name string
	// HandedOver, when set and true once the bridge's context has ended,
	// says the host's session goes on with another bridge (mcpd's bridge
	// socket going away under mcpdctl's relay, which re-sends the host's
	// open listens there): those listens then get no closing answer.
	HandedOver func() bool
	// LocalClock says mcpd runs in this process: the time of a
	// subscription event is on the bridge's clock, and a list change is
	// dated by it (when mcpd heard of it) rather than by when it came.
	LocalClock bool

	// plainClient names the host to mcpd by its own clientInfo name, with
	// no " (mcpdctl bridge)": mcpd's HTTP face is no bridge process.
	plainClient bool
	// byHandler: the HTTP handler applies reloads of mcpd's config to
	// this bridge (Reconfigure); other bridges of a profile ask mcpd about
	// it themselves when its lists change (refreshProfile).
	byHandler bool

	// work bounds the bridge's work for requests (lists in the
	// background, slowlists.go); nil: the bridge's life. serveLines sets
	// it: there the life ends at stdin's EOF, and the requests sent
	// before still get their answer.
	work context.Context
}

// DefaultName is the serverInfo name of a bridge serving several servers
// unless Options.Name says otherwise.
const DefaultName = "mcpdctl-bridge"

// Sink takes the bridge's messages to the host. scope is the id of the
// host request a message belongs to (its answer, its progress and log
// messages, the bridge's requests to the host made while handling it, the
// notifications of a subscriptions/listen), nil for unsolicited output
// (list changes and logs outside any request, warnings about missing
// servers, answers to unreadable requests).
type Sink interface {
	Send(scope json.RawMessage, m *jsonrpc.Message) error
}

// lineSink writes one message per line, each with one write: the message
// is encoded straight into a buffer the sink keeps (raw values byte for
// byte, jsonrpc.AppendMessage), and the buffer is written out whole.
type lineSink struct {
	mu  sync.Mutex // serializes writes to w; guards buf
	w   io.Writer
	buf []byte
}

// maxKeptBuffer is the largest buffer the sink keeps for the next message.
const maxKeptBuffer = 64 << 10

func (s *lineSink) Send(_ json.RawMessage, m *jsonrpc.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, err := jsonrpc.AppendMessage(s.buf[:0], m)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	data = append(data, '\n')
	if cap(data) <= maxKeptBuffer {
		s.buf = data
	}
	if _, err := s.w.Write(data); err != nil {
		return fmt.Errorf("write stdout: %w", err)
	}
	return nil
}

// ServeStdio runs a bridge for the host on in and out, one message a line,
// until in ends ("exit when the host closes stdin"). If mcpd is not running
// it serves anyway, answering that, and connects when mcpd is there.
func ServeStdio(ctx context.Context, be Backend, opts Options, in io.Reader, out io.Writer) error {
	return serveLines(ctx, be, opts, in, &lineSink{w: out}, nil)
}

// ServeStarted is ServeStdio for a caller that must tell its host how the
// start went before anything else (mcpd's bridge socket answers the
// header first): started is called once, with nil when the bridge is
// serving or with the error it fails with, before in is read. Messages
// the bridge sends meanwhile may reach out before started returns.
func ServeStarted(ctx context.Context, be Backend, opts Options, in io.Reader, out io.Writer, started func(error)) error {
	return serveLines(ctx, be, opts, in, &lineSink{w: out}, started)
}

// serveLines runs a bridge that reads the host's lines from in and sends
// its messages to sink; started, if not nil, is told how the start went.
func serveLines(ctx context.Context, be Backend, opts Options, in io.Reader, sink Sink, started func(error)) error {
	if opts.MaxLine <= 0 {
		opts.MaxLine = DefaultMaxLine
	}
	// life ends when the host closes stdin: subscriptions and requests to
	// the host end then, while requests in flight still get their answer.
	life, cancel := context.WithCancel(ctx)
	defer cancel()
	work, endWork := context.WithCancel(ctx)
	defer endWork()
	opts.work = work
	b, err := startBridge(life, be, opts, sink)
	if started != nil {
		started(err)
	}
	if err != nil {
		cancel()
		endWork()
		b.wg.Wait()
		return err
	}
	err = b.serve(ctx, in)
	cancel()
	b.reqs.Wait()
	endWork()
	b.wg.Wait()
	return err
}

// startBridge makes a bridge and sets it up. Hosts start their servers at
// launch, maybe before mcpd: when mcpd is down it serves anyway and reaches
// mcpd when it is there. On error the caller ends life and waits for b.wg.
func startBridge(life context.Context, be Backend, opts Options, sink Sink) (*bridge, error) {
	b := newBridge(life, be, opts, sink)
	err := b.setup(life, opts.Names, opts.All)
	switch {
	case err == nil:
		close(b.upst.up)
	case be.Down():
		b.opts.Warnf("bridge: %v; waiting for it", be.NotRunning())
		b.mu.Lock()
		b.upst.err = be.NotRunning()
		b.mu.Unlock()
		b.wg.Go(func() { b.setupLoop(life, opts.Names, opts.All) })
	default:
		return b, err
	}
	return b, nil
}

// scopeKey marks a context with the host request it serves.
type scopeKey struct{}

func withScope(ctx context.Context, id json.RawMessage) context.Context {
	return context.WithValue(ctx, scopeKey{}, id)
}

// scopeOf is the host request ctx serves, nil outside any.
func scopeOf(ctx context.Context) json.RawMessage {
	id, _ := ctx.Value(scopeKey{}).(json.RawMessage)
	return id
}

// emit sends m to the host as part of host request scope (nil: none).
func (b *bridge) emit(scope json.RawMessage, m *jsonrpc.Message) {
	m.JSONRPC = jsonrpc.Version
	if err := b.sink.Send(scope, m); err != nil {
		b.opts.Warnf("bridge: %v", err)
	}
}

// write sends unsolicited output; writeFor output of ctx's host request.
func (b *bridge) write(m *jsonrpc.Message) { b.emit(nil, m) }

func (b *bridge) writeFor(ctx context.Context, m *jsonrpc.Message) { b.emit(scopeOf(ctx), m) }

// notify sends a notification in scope (nil: unsolicited).
func (b *bridge) notify(scope json.RawMessage, method string, params any) {
	p, err := json.Marshal(params)
	if err != nil {
		return
	}
	b.emit(scope, &jsonrpc.Message{Method: method, Params: p})
}
