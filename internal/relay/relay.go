// Package relay is the host side of "mcpdctl bridge" when mcpd serves the
// bridge itself on its bridge socket (bridge.RelaySocketPath): it relays
// the host's bytes to that socket and mcpd's back, with no gRPC client and
// no decoding beyond each line's envelope. It owns what that needs to know
// of MCP: the host's requests in flight (answered with an error when the
// connection breaks), the session a new bridge must be told of (the
// initialize, the log level, resource subscriptions and open listens,
// replayed), mcpd's warning lines (taken out for stderr), and the move of
// a session to the bridge run in mcpdctl over gRPC (the fallback) when
// mcpd goes, and back to the socket when it returns.
package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// Bounds of the relay.
const (
	dialTimeout = 2 * time.Second
	// answerTimeout bounds mcpd's answer to the header: it is sent
	// once the bridge is set up, which may start the servers.
	answerTimeout = 2 * time.Minute
	bufferSize    = 256 << 10
)

// ErrNoSocket is the class of a relay that could not be opened: mcpd is
// not running, serves no bridge socket, or is of another version; the
// caller runs the bridge itself.
var ErrNoSocket = errors.New("no bridge socket")

// Dial connects to mcpd's bridge socket for the API socket at socket,
// sends h and reads the answer; the reader returned holds what follows it.
// An error wrapping ErrNoSocket means the bridge is to run in the caller;
// any other is the bridge's own failure (an unknown server, a bad
// profile), as mcpd words it.
func Dial(ctx context.Context, socket string, h bridge.RelayHeader) (Conn, *bufio.Reader, error) {
	d := net.Dialer{Timeout: dialTimeout}
	c, err := d.DialContext(ctx, "unix", bridge.RelaySocketPath(socket))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrNoSocket, err)
	}
	conn := rawio.NewConn(c).(Conn) // a *rawio.Conn, or the *net.UnixConn itself
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	data, err := json.Marshal(h)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("bridge header: %w", err)
	}
	_ = conn.SetDeadline(time.Now().Add(answerTimeout))
	br := bufio.NewReaderSize(conn, bufferSize)
	var a bridge.RelayAnswer
	if _, err = conn.Write(append(data, '\n')); err == nil {
		var line []byte
		if line, err = br.ReadSlice('\n'); err == nil {
			err = json.Unmarshal(line, &a)
		}
	}
	_ = conn.SetDeadline(time.Time{})
	switch {
	case ctx.Err() != nil:
		conn.Close()
		return nil, nil, ctx.Err()
	case err != nil: // mcpd went away meanwhile, or is not one that answers
		conn.Close()
		return nil, nil, fmt.Errorf("%w: %w", ErrNoSocket, err)
	case !a.OK && a.BadHeader:
		// An mcpd of another version, which does not know a field of
		// ours: the caller's own bridge over the API socket serves (and says
		// what is wrong, if anything still is).
		conn.Close()
		return nil, nil, fmt.Errorf("%w: %s", ErrNoSocket, a.Error)
	case !a.OK:
		conn.Close()
		return nil, nil, errors.New(a.Error)
	}
	return conn, br, nil
}

// Conn is a connection to the bridge socket: a *rawio.Conn, read and
// written with raw system calls (the relay's CPU per message is mostly
// its system calls), or the *net.UnixConn itself.
type Conn interface {
	net.Conn
	CloseWrite() error
}

// Options are a relayed session's collaborators.
type Options struct {
	// Out is the host's stdout; Warnf prints a warning on stderr.
	Out   io.Writer
	Warnf func(format string, args ...any)
	// Down returns the error the host's requests in flight are answered
	// with when the connection breaks (mcpd went).
	Down func() error
	// Fallback runs the bridge in this process over the API socket, on
	// the session from in to out, when the connection breaks.
	Fallback func(in io.Reader, out io.Writer) error
	// Redial opens a new relay connection (Dial); nil: a session that
	// fell back stays with the fallback.
	Redial func(ctx context.Context) (Conn, io.Reader, error)
	// RetryEvery is how often a session that fell back looks for mcpd's
	// bridge socket; zero: every 500 ms.
	RetryEvery time.Duration
	// MaxLine is the bridge's --max-line-size: a longer line of the host
	// is not followed (mcpd answers it as too large).
	MaxLine int
}

// Run relays one host session from in over conn (src reads conn past
// the answer, as Dial returns it) until in ends and the session is over,
// or ctx ends.
func Run(ctx context.Context, conn Conn, src, in io.Reader, o Options) error {
	r := &session{conn: conn, src: src, out: o.Out, warnf: o.Warnf, down: o.Down, fallback: o.Fallback,
		redial: o.Redial, retryEvery: o.RetryEvery, track: tracker{max: o.MaxLine}}
	return r.run(ctx, in)
}

// session is one host session relayed to mcpd's bridge socket.
//
// When the connection breaks, the fallback (the bridge run by the
// caller) takes the session on; once mcpd's bridge socket is back, the
// session returns to it at a point between messages (returnLoop), and may
// fall back again.
type session struct {
	conn     Conn
	src      io.Reader // conn, past the answer
	out      io.Writer // the host's stdout
	warnf    func(format string, args ...any)
	down     func() error                            // the error for requests in flight when mcpd goes
	fallback func(in io.Reader, out io.Writer) error // the bridge run by the caller
	// redial opens a new relay connection (Dial); nil: a session
	// that fell back stays with the fallback.
	redial func(ctx context.Context) (Conn, io.Reader, error)
	// retryEvery is how often a session that fell back looks for mcpd's
	// bridge socket. If zero, defaultRetryEvery.
	retryEvery time.Duration
	wg         sync.WaitGroup // copyDown, the fallbacks and returnLoop

	// fwdMu is held by the stdin loop while it hands a chunk on, and by
	// returnLoop while it moves the session: so no chunk is half on
	// either side. Lock order: fwdMu, then mu.
	fwdMu sync.Mutex

	mu          sync.Mutex // guards the fields below
	track       tracker
	broken      bool           // the connection ended: stdin goes to fb
	interrupted bool           // ctx ended: no fallback
	stdinDone   bool           // stdin ended (conn's write side is closed)
	fb          *io.PipeWriter // the fallback's stdin; nil without one
	fbOut       *fallbackOut   // the fallback's stdout
	fbErr       error          // the fallback's result
	switched    chan struct{}  // closed once broken is handled
	dead        chan struct{}  // closed when the fallback failed
	deadOnce    sync.Once
	ctx         context.Context // run's

	// Used by the stdin loop only (with fwdMu held).
	flushed  bool // the partial line was given to the fallback
	skipping bool // dropping the rest of an oversize line
}

// defaultRetryEvery is how often a session that fell back looks for mcpd's
// bridge socket.
const defaultRetryEvery = 500 * time.Millisecond

// run relays until stdin ends and the session is over.
func (r *session) run(ctx context.Context, in io.Reader) error {
	r.switched = make(chan struct{})
	r.dead = make(chan struct{})
	r.ctx = ctx
	conn, src := r.conn, r.src
	r.wg.Go(func() { r.copyDown(conn, src) })
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.interrupted = true
		conn := r.conn
		r.mu.Unlock()
		conn.Close()
		if d, ok := in.(interface{ SetReadDeadline(time.Time) error }); ok {
			_ = d.SetReadDeadline(time.Now()) // ends the stdin loop
		}
	})
	defer stop()
	// The stdin loop runs on a goroutine of its own so that a fallback
	// that failed ends the session at once, as the bridge's own failure
	// does, instead of the host's lines going nowhere until it closes
	// stdin; the loop is then left blocked on stdin, and the process exits.
	up := make(chan error, 1)
	go func() { up <- r.copyUp(in) }()
	var err error
	select {
	case err = <-up:
	case <-r.dead:
	case <-ctx.Done():
		// A signal: stdin may never end. The connection is closed
		// (above); a fallback running is ended through its stdin, its
		// requests through ctx.
		r.mu.Lock()
		if r.fb != nil {
			r.fb.Close()
		}
		r.mu.Unlock()
	}
	r.wg.Wait()
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.fbErr
}

// copyUp copies stdin to mcpd, or to the fallback once the connection
// broke, until stdin ends.
func (r *session) copyUp(in io.Reader) error {
	buf := make([]byte, bufferSize)
	for {
		n, err := in.Read(buf)
		if n > 0 {
			r.forward(buf[:n])
		}
		if err != nil {
			r.endInput()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read stdin: %w", err)
		}
	}
}

// forward sends a chunk of stdin on.
func (r *session) forward(p []byte) {
	r.fwdMu.Lock()
	defer r.fwdMu.Unlock()
	r.mu.Lock()
	broken, conn, switched := r.broken, r.conn, r.switched
	if !broken {
		r.track.feed(p) // before the write: a break answers what was fed
	}
	r.mu.Unlock()
	if !broken {
		if _, err := conn.Write(p); err == nil {
			return
		}
		conn.Close() // copyDown sees it and switches
		<-switched
		return // what was fed is answered; the partial line goes on below
	}
	<-switched
	r.toFallback(p)
}

// toFallback writes p to the fallback's stdin, after the line the relay
// was in the middle of when the connection broke. The tracker follows it
// too, so that returnLoop knows when the session is between messages.
func (r *session) toFallback(p []byte) {
	r.mu.Lock()
	fb := r.fb
	var partial []byte
	if !r.flushed {
		r.flushed = true
		partial, r.skipping = r.track.partial()
	}
	r.track.feed(p)
	r.mu.Unlock()
	if fb == nil {
		return // interrupted: the bridge is ending
	}
	if r.skipping { // the rest of an oversize line mcpd had the start of
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			return
		}
		p, r.skipping = p[i+1:], false
	}
	if len(partial) > 0 {
		if _, err := fb.Write(partial); err != nil {
			return
		}
	}
	_, _ = fb.Write(p) // fails only once the fallback ended
}

// endInput is the end of stdin: mcpd is told (its bridge answers what is
// in flight, then closes), or the fallback's stdin is closed.
func (r *session) endInput() {
	r.fwdMu.Lock()
	defer r.fwdMu.Unlock()
	r.mu.Lock()
	r.stdinDone = true
	broken, conn, switched := r.broken, r.conn, r.switched
	r.mu.Unlock()
	if !broken {
		_ = conn.CloseWrite()
		return
	}
	<-switched
	r.mu.Lock()
	fb := r.fb
	r.mu.Unlock()
	if fb != nil {
		fb.Close()
	}
}

// copyDown copies mcpd's output on conn to stdout, and its warnings to
// stderr, until the connection ends; then it handles the break. gate,
// when set, is the replay of a session that returned to the relay: the
// answers to the replayed requests are dropped.
func (r *session) copyDown(conn Conn, src io.Reader) { r.copyDownGated(conn, src, nil) }

func (r *session) copyDownGated(conn Conn, src io.Reader, gate *replayGate) {
	buf := make([]byte, bufferSize)
	var d demux
	if gate != nil {
		d.drop = gate.drop
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			d.split(buf[:n], r.out, r.warnf, r.answered)
		}
		if err != nil {
			d.cut() // a cut message never reaches the host; its request is failed below
			r.broke(conn)
			return
		}
	}
}

// answered forgets a request answered; failed: with an error.
func (r *session) answered(id []byte, failed bool) {
	r.mu.Lock()
	r.track.answered(id, failed)
	r.mu.Unlock()
}

// broke handles the end of the connection conn: unless the session is
// over (stdin ended, or ctx), the host's requests in flight are answered
// with an error and the fallback takes the session on.
func (r *session) broke(conn Conn) {
	conn.Close()
	down := r.down().Error() // outside r.mu: it may look at the socket file
	r.mu.Lock()
	if r.conn != conn || r.broken {
		r.mu.Unlock() // an old connection: the session has moved on
		return
	}
	defer close(r.switched)
	r.broken = true
	if r.interrupted {
		r.mu.Unlock()
		return
	}
	answers := r.track.failInFlight(nil, down)
	stdinDone := r.stdinDone
	var (
		in    io.Reader
		out   *fallbackOut
		pr    *io.PipeReader
		fbEnd chan struct{}
	)
	if !stdinDone {
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		r.fb = pw
		r.flushed = false
		replay, gate := r.track.replay()
		out = &fallbackOut{r: r, w: &replayFilter{w: r.out, gate: gate}}
		r.fbOut = out
		in = io.MultiReader(replay, pr)
		fbEnd = make(chan struct{})
	}
	r.mu.Unlock()
	// Written outside r.mu, which the stdin loop takes for every chunk: a
	// host slow to read its stdout must not stall its own writes to us.
	if len(answers) > 0 {
		if _, err := r.out.Write(answers); err != nil {
			r.warnf("bridge: write stdout: %v", err)
		}
	}
	if stdinDone {
		return // nothing more will come
	}
	r.warnf("bridge: lost mcpd's bridge socket; serving over the API socket")
	r.wg.Go(func() {
		defer close(fbEnd)
		err := r.fallback(in, out)
		pr.CloseWithError(errors.New("the bridge ended"))
		if out.retired() {
			return // the session went back to the relay
		}
		r.mu.Lock()
		r.fbErr = err
		r.mu.Unlock()
		if err != nil {
			r.deadOnce.Do(func() { close(r.dead) }) // the session cannot go on: run returns err
		}
	})
	if r.redial != nil {
		r.wg.Go(func() { r.returnLoop(out, fbEnd) })
	}
}

// fallbackOut is a fallback's stdout: it sees the answers go by (the
// session is between messages once none is awaited), and once the session
// went back to the relay it drops what the ending fallback still writes.
type fallbackOut struct {
	r *session
	w io.Writer // the replayFilter over the host's stdout

	mu  sync.Mutex // guards off; held for each write
	off bool
}

func (o *fallbackOut) Write(p []byte) (int, error) {
	// Before o.mu: moveBack holds r.mu while it retires o.
	if id, request, failed := messageID(p); id != nil && !request {
		o.r.answered(id, failed)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.off {
		return len(p), nil
	}
	return o.w.Write(p)
}

// retire drops the fallback's later output; a write in progress ends first.
func (o *fallbackOut) retire() {
	o.mu.Lock()
	o.off = true
	o.mu.Unlock()
}

func (o *fallbackOut) retired() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.off
}

// returnLoop moves the session that fell back (out is the fallback's
// stdout) back to mcpd's bridge socket once it is
// back, at a point between messages: no line of the host half read, no
// request of the host waiting for its answer (open listens aside, which
// the new bridge takes on). It ends when the session moved, ended, or the
// fallback ended.
func (r *session) returnLoop(out *fallbackOut, fbEnd <-chan struct{}) {
	every := r.retryEvery
	if every <= 0 {
		every = defaultRetryEvery
	}
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-fbEnd:
			return
		case <-r.ctx.Done():
			return
		}
		t.Reset(every)
		conn, src, err := r.redial(r.ctx)
		if err != nil {
			continue // mcpd is not back (or not serving the socket) yet
		}
		if !r.moveBack(out, conn, src, fbEnd) {
			conn.Close()
			continue
		}
		return
	}
}

// moveBack waits (briefly) for the session to be between messages, then
// moves it onto conn: the fallback is retired, the new bridge is told the
// session (replay) and the stdin loop goes on to conn. It reports whether
// it did.
func (r *session) moveBack(out *fallbackOut, conn Conn, src io.Reader, fbEnd <-chan struct{}) bool {
	const tries, pause = 50, 20 * time.Millisecond
	for i := 0; ; i++ {
		r.fwdMu.Lock()
		r.mu.Lock()
		if r.stdinDone || r.interrupted || !r.broken {
			r.mu.Unlock()
			r.fwdMu.Unlock()
			return false
		}
		if r.track.between() {
			break // both locks held
		}
		r.mu.Unlock()
		r.fwdMu.Unlock()
		if i == tries {
			return false
		}
		select {
		case <-time.After(pause):
		case <-fbEnd:
			return false
		}
	}
	defer r.fwdMu.Unlock()
	out.retire()
	fb := r.fb
	r.fb, r.fbOut = nil, nil
	replay, gate := r.track.replay()
	r.conn, r.src = conn, src
	r.broken = false
	r.switched = make(chan struct{})
	r.mu.Unlock()
	fb.Close() // the fallback ends: nothing of the host's is in flight on it
	r.warnf("bridge: mcpd's bridge socket is back; serving through it again")
	r.wg.Go(func() { r.copyDownGated(conn, src, gate) })
	// The new bridge is told the session: the initialize first, the rest
	// once it answered (the gate). Its answers are dropped (demux).
	if _, err := io.Copy(conn, replay); err != nil {
		conn.Close() // copyDown sees it, and the session falls back again
	}
	return true
}
