package httpface

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/peercred"
	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// Bounds of the HTTP server.
const (
	readHeaderTimeout = 10 * time.Second
	maxHeaderBytes    = 64 << 10
)

// Options configure a Face.
type Options struct {
	// Logger may be nil.
	Logger *zap.Logger
	// Server, if set, lists each allowed connection as an app in status
	// (core.App), whose calls the Backend attributes to it.
	Server *core.Service
	// WantUID is the only uid served; -1 means the process's effective uid.
	WantUID int
}

// Face serves an http.Handler on a listener to this machine's user only:
// every connection's peer uid is checked once, at its first request (a Unix
// socket's SO_PEERCRED, a TCP peer socket's owner), and every request's
// Host and Origin against DNS rebinding; what fails gets 403 and one log
// line.
type Face struct {
	ln      net.Listener
	port    int // the bound TCP port; 0 on a unix socket
	wantUID int
	log     *zap.Logger
	srv     *core.Service
	next    http.Handler
	http    *http.Server
	base    context.Context // every request's; cancelled by Close
	cancel  context.CancelFunc
	done    chan struct{} // closed when Serve returned
	err     error         // Serve's error; read after done

	mu   sync.Mutex // guards apps (nil once closed); taken alone, never across a call into core.Service
	apps map[net.Conn]*connApp
}

// connPeer is the check of one connection's peer, done by its first
// request (net/http calls ConnContext on its accept loop, which a lookup
// must not hold up) and kept for the others; it rides in the
// connection's context.
type connPeer struct {
	conn net.Conn
	once sync.Once
	uid  int
	pid  int
	err  error    // the uid could not be found
	app  *connApp // nil until the peer is allowed

	// process is the peer's process (processID), found once.
	processOnce sync.Once
	process     int
}

// processID is the peer's process: its SO_PEERCRED pid, else a loopback
// TCP peer's, the holder of its socket (a walk of /proc, made once per
// connection and only when asked); 0 when unknown. The peer was allowed.
func (p *connPeer) processID() int {
	p.processOnce.Do(func() {
		p.process = p.pid
		if p.process == 0 {
			p.process = peercred.TCPPeerPID(p.conn, p.uid)
		}
	})
	return p.process
}

type peerKey struct{}

// Serve starts serving next on ln, on a goroutine of its own that Close
// waits for.
func Serve(ln net.Listener, next http.Handler, opts Options) *Face {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	want := peercred.Wanted(opts.WantUID)
	f := &Face{ln: ln, wantUID: want, log: log, srv: opts.Server, next: next,
		done: make(chan struct{}), apps: map[net.Conn]*connApp{}}
	if a, ok := ln.Addr().(*net.TCPAddr); ok {
		f.port = a.Port
	}
	f.base, f.cancel = context.WithCancel(context.Background())
	f.http = &http.Server{
		Handler:           http.HandlerFunc(f.serveHTTP),
		ReadHeaderTimeout: readHeaderTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return f.base },
		ConnContext:       f.connContext,
		ConnState:         f.connState,
		ErrorLog:          zap.NewStdLog(log.Named("server")),
	}
	go func() { // owned: Close waits for done
		defer close(f.done)
		if err := f.http.Serve(rawio.NewListener(ln)); !errors.Is(err, http.ErrServerClosed) {
			f.err = err
		}
	}()
	return f
}

// URL is the base URL hosts reach the face on (BaseURL).
func (f *Face) URL() string { return BaseURL(f.ln) }

// Addr is the bound address.
func (f *Face) Addr() net.Addr { return f.ln.Addr() }

// Close stops accepting, ends every request and stream at once (their
// contexts are cancelled, then the connections closed), waits for the
// server and removes a unix socket file.
func (f *Face) Close() error {
	f.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := f.http.Shutdown(ctx); err != nil {
		f.http.Close()
	}
	<-f.done
	f.mu.Lock()
	apps := f.apps
	f.apps = nil
	f.mu.Unlock()
	for _, a := range apps { // outside f.mu: Close calls into core.Service
		a.close()
	}
	if f.err != nil {
		return fmt.Errorf("HTTP: serve: %w", f.err)
	}
	return nil
}

// connContext gives a new connection its peer check.
func (f *Face) connContext(ctx context.Context, c net.Conn) context.Context {
	if h, ok := c.(bridge.WriteHolder); ok { // rawio.Conn: an answer leaves in one write(2)
		ctx = bridge.WithWriteHolder(ctx, h)
	}
	p := &connPeer{conn: c, uid: -1}
	// The peer is the bridge's caller for the connection's requests, and
	// its app once checkPeer allowed it (appFromContext): no request
	// needs a context of its own for it.
	return bridge.WithCaller(context.WithValue(ctx, peerKey{}, p), p)
}

// checkPeer checks the peer of p's connection the first time it is asked,
// logging a refusal once, and registers an allowed one as an app. It
// reports whether the peer is served.
func (f *Face) checkPeer(p *connPeer) bool {
	p.once.Do(func() {
		c := p.conn
		p.uid, p.pid, p.err = peercred.Get(c) // a Unix socket's, or a TCP peer socket's owner
		switch {
		case p.err != nil:
			f.log.Warn("HTTP connection refused: its peer's uid is unknown", zap.String("remote_addr", c.RemoteAddr().String()), zap.Error(p.err))
		case p.uid != f.wantUID:
			f.log.Warn("HTTP connection refused: another user", zap.Int("uid", p.uid), zap.Int("want_uid", f.wantUID),
				zap.String("remote_addr", c.RemoteAddr().String()))
		case f.srv != nil:
			f.register(p)
		}
	})
	return p.err == nil && p.uid == f.wantUID
}

// register makes p's allowed connection an app, listed in status from its
// first call (connApp), unless the face closed meanwhile.
func (f *Face) register(p *connPeer) {
	a := &connApp{make: func() *core.App { return f.srv.NewLocalApp(core.TransportHTTP, DefaultAppName, p.uid, p.pid) }}
	f.mu.Lock()
	open := f.apps != nil
	if open {
		f.apps[p.conn] = a
	}
	f.mu.Unlock()
	if !open {
		a.close()
	}
	p.app = a
}

// connState forgets the app of a connection that ended.
func (f *Face) connState(c net.Conn, st http.ConnState) {
	if st != http.StateClosed && st != http.StateHijacked {
		return
	}
	f.mu.Lock()
	a := f.apps[c]
	delete(f.apps, c)
	f.mu.Unlock()
	if a != nil {
		a.close()
	}
}

// serveHTTP refuses what the checks refuse and passes the rest on.
func (f *Face) serveHTTP(w http.ResponseWriter, r *http.Request) {
	p, _ := r.Context().Value(peerKey{}).(*connPeer)
	if p == nil || !f.checkPeer(p) {
		forbid(w, "mcpd serves only its own user")
		return
	}
	if !hostAllowed(r.Host, f.port) {
		f.log.Warn("HTTP request refused: Host is not this machine's loopback", zap.String("host", r.Host),
			zap.String("remote_addr", r.RemoteAddr))
		forbid(w, "Host must be 127.0.0.1, [::1] or localhost with mcpd's port")
		return
	}
	if o := r.Header.Values("Origin"); len(o) > 1 || len(o) == 1 && o[0] != "" && !originAllowed(o[0], f.port) {
		f.log.Warn("HTTP request refused: Origin is not this machine", zap.Strings("origin", o),
			zap.String("remote_addr", r.RemoteAddr))
		forbid(w, "Origin must be one http(s)://127.0.0.1, [::1] or localhost with mcpd's port")
		return
	}
	f.next.ServeHTTP(w, r)
}
