package supervisor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// backend is what runs one server: a child process (*transport.Process)
// or a connection to a remote server (*remote.Conn). The session talks to
// either as a session.Conn.
type backend interface {
	session.Conn
	// Pid is the child's process id; 0 for a remote server.
	Pid() int
	// Done is closed once the process was reaped or the connection ended.
	Done() <-chan struct{}
	// ExitError is the process's exit error or why the connection ended
	// (nil when mcpd closed it).
	ExitError() error
	// Stop runs the shutdown sequence (stdin, SIGTERM, SIGKILL; or
	// DELETE of the HTTP session) and returns once it is done.
	Stop() error
	// Kill ends it at once.
	Kill()
	// Hung says why a child that stopped reading its stdin was killed.
	Hung() error
	Stats() transport.Stats
}

var (
	_ backend = (*transport.Process)(nil)
	_ backend = (*remote.Conn)(nil)
)

// isRemote reports whether spec is a remote server.
func isRemote(spec *Spec) bool { return spec.Remote != nil }

// dialRemote connects to the remote server of spec (spawn's counterpart
// for a server without a process), sending headers (spec's, with the
// secrets resolved).
func (sv *server) dialRemote(ctx context.Context, spec *Spec, headers map[string]string) (*remote.Conn, error) {
	r := spec.Remote
	var auth remote.Authorizer
	if f := sv.sup.opts.NewAuthorizer; f != nil {
		auth = f(spec.Name, r)
	}
	conn, err := remote.Dial(ctx, remote.Options{
		Name:           spec.Name,
		URL:            r.URL,
		Type:           sv.remoteType(r),
		Headers:        headers,
		Authorizer:     auth,
		MaxMessageSize: spec.MaxLineSize,
		ShutdownGrace:  spec.ShutdownGrace,
		Pool:           sv.httpPool(),
		Events:         sv.ring,
		Logger:         sv.sup.log,
	})
	if err != nil {
		return nil, startFailed(spec.Name, err)
	}
	sv.log.Info("server connecting", zap.String("url", conn.URL()), zap.String("type", r.Type))
	sv.emit(EventStarted, 0, "", "")
	return conn, nil
}

// learnedTransport is the transport a remote server was found to speak
// when it differs from its config's (the HTTP+SSE fallback), for that
// config.
type learnedTransport struct {
	remote *config.Remote
	typ    string
}

// remoteType is the transport to dial r with: the one learned for this
// config, else the configured one.
func (sv *server) remoteType(r *config.Remote) string {
	if l := sv.transport.Load(); l != nil && reflect.DeepEqual(l.remote, r) {
		return l.typ
	}
	return r.Type
}

// noteTransport logs the transport conn settled on and remembers it for
// the server's current remote config, so that reconnects dial it at once.
func (sv *server) noteTransport(spec *Spec, conn *remote.Conn) {
	typ := conn.Transport()
	if typ == sv.remoteType(spec.Remote) {
		return
	}
	sv.log.Info("remote server transport chosen", zap.String("type", typ), zap.String("url", conn.URL()))
	sv.transport.Store(&learnedTransport{remote: spec.Remote, typ: typ})
}

// httpPool is the server's HTTP connection pool, made on first use and
// kept across reconnects.
func (sv *server) httpPool() *remote.Pool {
	sv.poolOnce.Do(func() { sv.pool = remote.NewPool() })
	return sv.pool
}

// describeEnd renders how a backend ended, for status and events: a
// process's exit status, or why a remote connection ended.
func describeEnd(b backend, err error) string {
	if _, ok := b.(*remote.Conn); ok {
		if err == nil || errors.Is(err, io.EOF) {
			return "closed"
		}
		return err.Error()
	}
	return describeExit(err)
}

// loginRequired reports whether err says the server needs a login.
func loginRequired(err error) bool { return errors.Is(err, remote.ErrLoginRequired) }

// ErrLoginRequired: the remote server needs the user to log in (mcpdctl
// login NAME); calls fail with it until then.
var ErrLoginRequired = remote.ErrLoginRequired

// loginError is the error of calls to a server waiting for a login.
func (sv *server) loginError(cause error) error {
	return &loginRequiredError{msg: fmt.Sprintf("server %q requires login; run: mcpdctl login %s", sv.spec.Name, sv.spec.Name), cause: cause, server: sv.spec.Name}
}

// loginRequiredError matches ErrLoginRequired (UNAUTHENTICATED) and keeps
// the cause for logs.
type loginRequiredError struct {
	msg    string
	cause  error
	server string // named by msg
}

func (e *loginRequiredError) Error() string        { return e.msg }
func (e *loginRequiredError) Is(target error) bool { return target == ErrLoginRequired }
func (e *loginRequiredError) Unwrap() error        { return e.cause }
func (e *loginRequiredError) Server() string       { return e.server }

// remoteStartError ends a connection whose handshake failed and says why:
// what ended the connection (connection refused, TLS, an HTTP status)
// rather than the session's "server exited". A start that ran out of
// time (ctx's) before any connection was made is a network failure
// (remote.ConnectTimeoutError).
func (sv *server) remoteStartError(ctx context.Context, spec *Spec, conn *remote.Conn, sess *session.Session, err error) error {
	conn.Kill()
	<-conn.Done()
	sess.Wait()
	if ctx.Err() != nil {
		if cte := conn.ConnectTimedOut(); cte != nil {
			return startFailed(spec.Name, cte)
		}
	}
	cause := conn.ExitError()
	if cause == nil {
		if he := (*session.HandshakeError)(nil); errors.As(err, &he) {
			return &startError{server: spec.Name, msg: fmt.Sprintf("handshake failed: %v", he.Err), err: err}
		}
		return &startError{server: spec.Name, msg: "handshake: " + err.Error(), err: err}
	}
	msg := strings.TrimPrefix(cause.Error(), fmt.Sprintf("server %q: ", spec.Name))
	return &startError{server: spec.Name, msg: msg, err: cause}
}

// remoteExit handles the end of a remote connection that mcpd did not ask
// for, when it needs more than a restart with backoff (loop only): a
// login is required, or the session expired, which starts a new session
// at once (the calls that met the 404 are sent again: server.call). It
// reports whether it handled the end.
func (sv *server) remoteExit(c *child, exitErr, err error) bool {
	switch {
	case c.pid != 0 || exitErr == nil:
		return false
	case loginRequired(exitErr):
		sv.log.Warn("server requires login", zap.Error(exitErr))
		sv.emit(EventExited, 0, "", err.Error())
		sv.needLogin(exitErr)
		return true
	case sv.networkFailure(exitErr):
		sv.log.Warn("remote server unreachable", zap.Error(exitErr))
		sv.emit(EventExited, 0, "", err.Error())
		sv.afterNetworkFailure(exitErr, true) // netfail.go
		return true
	case errors.Is(exitErr, remote.ErrSessionExpired) && sv.recentExits()+1 < sv.sup.opts.CrashLoopMax:
		// Counted toward the crash-loop bound, so that a server expiring
		// every session at once is held down like a crashing child.
		sv.exits = append(sv.exits, sv.sup.now())
		sv.log.Info("remote session expired; starting a new one")
		sv.emit(EventExited, 0, "session expired", err.Error())
		sv.restartNext = true
		sv.setState(StateStopped)
		if sv.demand() || sv.subsDemand() || sv.spec.Restart == RestartAlways {
			sv.beginStart()
		}
		return true
	}
	return false
}

// needLogin holds the server in StateLoginRequired (loop only): calls
// fail UNAUTHENTICATED until mcpdctl login (then start or restart).
func (sv *server) needLogin(cause error) {
	sv.setState(StateLoginRequired)
	sv.failErr = cause
	lerr := sv.loginError(cause)
	sv.update(func(st *snapshot) { st.lastError = lerr.Error() })
	sv.emit(EventFailed, 0, "", lerr.Error())
	sv.replyAll(&sv.waiters, reply{err: lerr})
	sv.replyAll(&sv.startWaiters, reply{err: lerr})
}

// recentExits counts the unexpected exits within the crash-loop window
// (loop only).
func (sv *server) recentExits() int {
	n, now := 0, sv.sup.now()
	for _, t := range sv.exits {
		if now.Sub(t) < sv.sup.opts.CrashLoopWindow {
			n++
		}
	}
	return n
}
