package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// The bridge's fast path: mcpd runs the bridge itself and serves it on its
// bridge socket (bridge.RelaySocketPath); mcpdctl only relays the host's
// bytes, with no gRPC client and no decoding beyond each line's envelope.
// When that socket is not there (mcpd not running, or an mcpd without it)
// the bridge runs here over gRPC as before. When the connection breaks
// (mcpd stopped or restarted), the host's requests in flight are answered
// with an error and the session goes on with the bridge run here, fed
// first with what it needs to know of the session (relayTracker).

// relayEnv set to "0" makes mcpdctl bridge run its bridge itself, never
// through mcpd's bridge socket.
const relayEnv = "MCPD_BRIDGE_RELAY"

// Bounds of the relay.
const (
	relayDialTimeout = 2 * time.Second
	// relayAnswerTimeout bounds mcpd's answer to the header: it is sent
	// once the bridge is set up, which may start the servers.
	relayAnswerTimeout = 2 * time.Minute
	relayBuffer        = 256 << 10
)

// errNoRelay is a relay that could not be opened: the bridge runs here.
var errNoRelay = errors.New("no bridge socket")

// dialRelay connects to mcpd's bridge socket for the API socket at
// socket, sends h and reads the answer. An error wrapping errNoRelay
// means the bridge is to run here; any other is the bridge's own failure
// (an unknown server, a bad profile), as mcpd words it.
func dialRelay(ctx context.Context, socket string, h bridge.RelayHeader) (relayConn, *bufio.Reader, error) {
	d := net.Dialer{Timeout: relayDialTimeout}
	c, err := d.DialContext(ctx, "unix", bridge.RelaySocketPath(socket))
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", errNoRelay, err)
	}
	conn := rawio.NewConn(c).(relayConn) // a *rawio.Conn, or the *net.UnixConn itself
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	data, err := json.Marshal(h)
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("bridge header: %w", err)
	}
	_ = conn.SetDeadline(time.Now().Add(relayAnswerTimeout))
	br := bufio.NewReaderSize(conn, relayBuffer)
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
		return nil, nil, fmt.Errorf("%w: %w", errNoRelay, err)
	case !a.OK && strings.HasPrefix(a.Error, "bad header:"):
		// An mcpd of another version, which does not know a field of
		// ours: the bridge run here over the API socket serves (and says
		// what is wrong, if anything still is).
		conn.Close()
		return nil, nil, fmt.Errorf("%w: %s", errNoRelay, a.Error)
	case !a.OK:
		conn.Close()
		return nil, nil, errors.New(a.Error)
	}
	return conn, br, nil
}

// relayConn is the bridge socket: a *rawio.Conn, read and written with
// raw system calls (the relay's CPU per message is mostly its system
// calls), or the *net.UnixConn itself.
type relayConn interface {
	net.Conn
	CloseWrite() error
}

// relay is one host session relayed to mcpd's bridge socket.
type relay struct {
	conn     relayConn
	src      io.Reader // conn, past the answer
	out      io.Writer // the host's stdout
	warnf    func(format string, args ...any)
	down     func() error                            // the error for requests in flight when mcpd goes
	fallback func(in io.Reader, out io.Writer) error // the bridge run here
	wg       sync.WaitGroup                          // relayDown and the fallback

	mu          sync.Mutex // guards the fields below
	track       relayTracker
	broken      bool           // the connection ended: stdin goes to fb
	interrupted bool           // ctx ended: no fallback
	stdinDone   bool           // stdin ended (conn's write side is closed)
	fb          *io.PipeWriter // the fallback's stdin; nil without one
	fbErr       error          // the fallback's result
	switched    chan struct{}  // closed once broken is handled
	dead        chan struct{}  // closed when the fallback failed

	// Used by the stdin loop only.
	flushed  bool // the partial line was given to the fallback
	skipping bool // dropping the rest of an oversize line
}

// run relays until stdin ends and the session is over.
func (r *relay) run(ctx context.Context, in io.Reader) error {
	r.switched = make(chan struct{})
	r.dead = make(chan struct{})
	r.wg.Go(r.relayDown)
	stop := context.AfterFunc(ctx, func() {
		r.mu.Lock()
		r.interrupted = true
		r.mu.Unlock()
		r.conn.Close()
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
	go func() { up <- r.relayUp(in) }()
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

// relayUp copies stdin to mcpd, or to the fallback once the connection
// broke, until stdin ends.
func (r *relay) relayUp(in io.Reader) error {
	buf := make([]byte, relayBuffer)
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
func (r *relay) forward(p []byte) {
	r.mu.Lock()
	broken := r.broken
	if !broken {
		r.track.feed(p) // before the write: a break answers what was fed
	}
	r.mu.Unlock()
	if !broken {
		if _, err := r.conn.Write(p); err == nil {
			return
		}
		r.conn.Close() // relayDown sees it and switches
		<-r.switched
		return // what was fed is answered; the partial line goes on below
	}
	<-r.switched
	r.toFallback(p)
}

// toFallback writes p to the fallback's stdin, after the line the relay
// was in the middle of when the connection broke.
func (r *relay) toFallback(p []byte) {
	r.mu.Lock()
	fb := r.fb
	var partial []byte
	if !r.flushed {
		r.flushed = true
		partial, r.skipping = r.track.partial()
	}
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
func (r *relay) endInput() {
	r.mu.Lock()
	r.stdinDone = true
	broken := r.broken
	r.mu.Unlock()
	if !broken {
		_ = r.conn.CloseWrite()
		return
	}
	<-r.switched
	r.mu.Lock()
	fb := r.fb
	r.mu.Unlock()
	if fb != nil {
		fb.Close()
	}
}

// relayDown copies mcpd's output to stdout, and its warnings to stderr,
// until the connection ends; then it handles the break.
func (r *relay) relayDown() {
	buf := make([]byte, relayBuffer)
	var d relayDemux
	for {
		n, err := r.src.Read(buf)
		if n > 0 {
			d.split(buf[:n], r.out, r.warnf, r.answered)
		}
		if err != nil {
			d.cut() // a cut message never reaches the host; its request is failed below
			r.broke()
			return
		}
	}
}

// answered forgets a request mcpd answered; failed: with an error.
func (r *relay) answered(id []byte, failed bool) {
	r.mu.Lock()
	r.track.answered(id, failed)
	r.mu.Unlock()
}

// broke handles the end of the connection: unless the session is over
// (stdin ended, or ctx), the host's requests in flight are answered with
// an error and the bridge run here takes the session on.
func (r *relay) broke() {
	r.conn.Close()
	defer close(r.switched)
	down := r.down().Error() // outside r.mu: it may look at the socket file
	r.mu.Lock()
	r.broken = true
	if r.interrupted {
		r.mu.Unlock()
		return
	}
	answers := r.track.failInFlight(nil, down)
	stdinDone := r.stdinDone
	var (
		in  io.Reader
		out io.Writer
		pr  *io.PipeReader
	)
	if !stdinDone {
		var pw *io.PipeWriter
		pr, pw = io.Pipe()
		r.fb = pw
		replay, gate := r.track.replay()
		in, out = io.MultiReader(replay, pr), &replayFilter{w: r.out, gate: gate}
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
		err := r.fallback(in, out)
		pr.CloseWithError(errors.New("the bridge ended"))
		r.mu.Lock()
		r.fbErr = err
		r.mu.Unlock()
		if err != nil {
			close(r.dead) // the session cannot go on: run returns err
		}
	})
}

// relayOff reports whether the environment turns the relay off.
func relayOff() bool { return os.Getenv(relayEnv) == "0" }
