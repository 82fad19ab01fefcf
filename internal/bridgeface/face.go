// Package bridgeface serves "mcpdctl bridge" from inside the daemon: on a
// Unix socket of its own (bridge.RelaySocketPath), each connection is one
// host's session, whose bridge (internal/bridge) runs in mcpd over the
// in-process backend of the HTTP face (httpface.Backend), so that mcpdctl
// only relays the host's bytes. Every connection's peer must be the
// daemon's uid; it is listed in status as an app (core.TransportRelay).
// Nothing below cmd/mcpd imports it.
package bridgeface

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/peercred"
	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// headerTimeout bounds the wait for a connection's header line.
const headerTimeout = 10 * time.Second

// Options configure a Face.
type Options struct {
	Logger  *zap.Logger    // may be nil
	Server  *core.Service  // lists each connection as an app
	Backend bridge.Backend // the in-process backend the bridges call
	// WantUID is the only uid served; -1 means the process's effective uid.
	WantUID int
}

// Face serves bridge sessions on a listener until Close.
type Face struct {
	ln      net.Listener
	opts    Options
	log     *zap.Logger
	wantUID int
	life    context.Context // every session's; cancelled by Close
	stop    context.CancelFunc
	wg      sync.WaitGroup // the accept loop and the sessions

	mu     sync.Mutex // guards conns and closed
	conns  map[net.Conn]struct{}
	closed bool
}

// Serve starts serving on ln (a Unix socket listener), on goroutines that
// Close waits for.
func Serve(ln net.Listener, opts Options) *Face {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	want := peercred.Wanted(opts.WantUID)
	f := &Face{ln: ln, opts: opts, log: log, wantUID: want, conns: map[net.Conn]struct{}{}}
	f.life, f.stop = context.WithCancel(context.Background())
	f.wg.Go(f.acceptLoop)
	return f
}

// Addr is the socket's address.
func (f *Face) Addr() net.Addr { return f.ln.Addr() }

// Close stops accepting, ends every session (their bridges' calls are
// cancelled and their connections closed) and waits for them; the socket
// file is removed with the listener.
func (f *Face) Close() error {
	f.stop()
	err := f.ln.Close()
	f.mu.Lock()
	f.closed = true
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("bridge socket: close: %w", err)
	}
	return nil
}

// acceptLoop accepts until the listener is closed. Any other accept error
// (out of file descriptors, say) is waited out with a growing pause, as
// net/http does, so that a passing shortage does not end the socket.
func (f *Face) acceptLoop() {
	var pause time.Duration
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || f.life.Err() != nil {
				return
			}
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			f.log.Warn("bridge socket: accept failed; retrying", zap.Duration("pause", pause), zap.Error(err))
			select {
			case <-f.life.Done():
				return
			case <-time.After(pause): // the retry pause, not a correctness wait
			}
			continue
		}
		pause = 0
		if !f.track(c) {
			c.Close()
			return
		}
		f.wg.Go(func() {
			defer f.untrack(c)
			f.serveConn(c)
		})
	}
}

// track records an open connection; false once the face is closed.
func (f *Face) track(c net.Conn) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.conns[c] = struct{}{}
	return true
}

// untrack closes and forgets a connection whose session ended.
func (f *Face) untrack(c net.Conn) {
	c.Close()
	f.mu.Lock()
	delete(f.conns, c)
	f.mu.Unlock()
}

// serveConn checks the peer, reads the header and runs the session.
func (f *Face) serveConn(c net.Conn) {
	uid, pid, err := peercred.Verify(c, f.wantUID, f.log.Named("peercred"))
	if err != nil {
		return // logged, and closed
	}
	s, err := openSession(rawio.NewConn(c), f.opts.Server, uid, pid)
	if err != nil {
		f.log.Warn("bridge socket: bad header", zap.Int("pid", pid), zap.Error(err))
		s.answer(err)
		return
	}
	defer s.app.Close()
	f.log.Debug("bridge session", zap.Int("pid", pid), zap.Strings("servers", s.h.Names), zap.Bool("all", s.h.All),
		zap.String("profile", s.h.Profile))
	if err := s.run(f.life, f.opts.Backend); err != nil && f.life.Err() == nil {
		f.log.Debug("bridge session ended", zap.Int("pid", pid), zap.Error(err))
	}
}
