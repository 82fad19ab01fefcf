package supervisor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// startResult is the outcome of one start attempt, sent to the loop.
type startResult struct {
	c   *child // non-nil on success
	err error
	// exit is the child's exit status if it exited during the attempt.
	exit string
	// verdict is a protocol verdict learned even by a failed attempt
	// (legacy after an exit right after the probe).
	verdict string
	// permanent: the command cannot start (transport.ErrCannotStart) or
	// the handshake is impossible → failed.
	permanent bool
	// canceled: the attempt was cancelled by a stop or shutdown.
	canceled bool
	// timedOut: the handshake did not end within the start timeout.
	timedOut bool
}

// attempt spawns the child and negotiates the era under one start timeout.
// On failure every process it spawned has been reaped.
func (sv *server) attempt(ctx context.Context, protocol string) startResult {
	limit := sv.startTimeout()
	hctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()

	var verdict string
	proto := protocol
	reprobed := false
	for {
		c, exit, err := sv.spawn(hctx, proto)
		if err == nil {
			return startResult{c: c, verdict: verdict}
		}
		switch {
		case ctx.Err() != nil:
			return startResult{err: startFailed(sv.spec.Name, context.Cause(ctx)), canceled: true, exit: exit, verdict: verdict}
		case errors.Is(err, session.ErrExitedAfterProbe) && proto != session.ProtocolLegacy:
			// "falls back to initialize on ... exit right after the probe
			// (restart straight into initialize)"; not a crash.
			sv.log.Info("server exited after the discover probe; restarting as legacy")
			proto, verdict = session.ProtocolLegacy, session.ProtocolLegacy
			continue
		case exit != "":
			// Crash on start: counts as an unexpected exit.
			return startResult{err: err, exit: exit, verdict: verdict}
		case errors.Is(err, session.ErrHandshake) && !reprobed && proto != session.ProtocolAuto &&
			(sv.configuredProtocol() == "" || sv.configuredProtocol() == session.ProtocolAuto):
			// A remembered verdict no longer holds (a server updated to the
			// other era, or a legacy verdict learned from a crash on start
			// that looked like an exit after the probe): probe again.
			sv.log.Info("remembered era verdict failed; probing again", zap.String("verdict", proto), zap.Error(err))
			proto, verdict, reprobed = session.ProtocolAuto, session.ProtocolAuto, true
			continue
		case errors.Is(err, transport.ErrCannotStart), errors.Is(err, session.ErrHandshake),
			errors.Is(err, remote.ErrUnauthorized), errors.As(err, new(*secretError)):
			return startResult{err: err, exit: exit, verdict: verdict, permanent: true}
		case remote.Unreachable(err):
			// A dial that hung until the start timeout: the network's.
			return startResult{err: err, exit: exit, verdict: verdict}
		case hctx.Err() != nil:
			return startResult{err: &startError{server: sv.spec.Name, msg: fmt.Sprintf("handshake timed out after %s", limit)}, exit: exit, verdict: verdict, timedOut: true}
		default:
			return startResult{err: err, exit: exit, verdict: verdict}
		}
	}
}

// startTimeout bounds one start attempt (spawn, discover probe, initialize):
// the supervisor's HandshakeTimeout, or less when the server's own
// requestTimeout is configured, since initialize is a request like any
// other: the probe's timeout plus the request timeout.
func (sv *server) startTimeout() time.Duration {
	spec := sv.currentSpec()
	limit := sv.sup.opts.HandshakeTimeout
	if spec.RequestTimeout > 0 {
		probe := spec.DiscoverTimeout
		if probe <= 0 {
			probe = session.DefaultDiscoverTimeout
		}
		limit = min(limit, probe+spec.RequestTimeout)
	}
	return limit
}

// spawn starts one process (or connects to the remote server) and runs
// the handshake. On failure the process has been reaped; exit is its exit
// status when it exited by itself.
func (sv *server) spawn(ctx context.Context, proto string) (c *child, exit string, err error) {
	specCopy := sv.currentSpec() // reload may change sv.spec meanwhile
	spec := &specCopy
	proc, err := sv.startBackend(ctx, spec, proto)
	if err != nil {
		return nil, "", err // names the server and the cause: "start %q: ..."
	}
	c, exit, err = sv.sessionFor(ctx, spec, proto, proc, proc.Pid())
	if conn, ok := proc.(*remote.Conn); ok && err == nil {
		sv.noteTransport(spec, conn) // backend.go
	}
	return c, exit, err
}

// startBackend starts the child process, or dials the remote server.
func (sv *server) startBackend(ctx context.Context, spec *Spec, proto string) (backend, error) {
	res, err := sv.resolveSecrets(ctx, spec) // secrets.go
	if err != nil {
		return nil, err
	}
	if isRemote(spec) {
		conn, err := sv.dialRemote(ctx, spec, res.headers) // backend.go
		if err != nil {
			return nil, err
		}
		return conn, nil
	}
	proc, err := transport.Start(transport.Options{
		Name:          spec.Name,
		Command:       spec.Command,
		Args:          res.args,
		LogArgs:       spec.Args, // ${secret:NAME}, not the values
		Env:           childEnv(res.env),
		Dir:           spec.Cwd,
		MaxLineSize:   spec.MaxLineSize,
		ShutdownGrace: spec.ShutdownGrace,
		StdinTimeout:  spec.StdinTimeout,
		Stderr:        sv.ring,
		Logger:        sv.childLog(), // transport adds the server field
		Keeper:        sv.sup.opts.Keeper,
		Sandbox:       spec.Sandbox,
	})
	if err != nil {
		return nil, err // transport names the server and the cause: "start %q: ..."
	}
	pid := proc.Pid()
	sv.update(func(st *snapshot) { st.pid, st.sandbox = pid, proc.Sandbox() })
	sv.log.Info("server started", zap.Int("pid", pid), zap.String("protocol", proto))
	sv.emit(EventStarted, pid, "", "")
	return proc, nil
}

// sessionFor is the rest of spawn: the session and its handshake on proc.
func (sv *server) sessionFor(ctx context.Context, spec *Spec, proto string, proc backend, pid int) (c *child, exit string, err error) {
	sess := session.New(proc, sv.sessionOptions(spec, proto))
	info, err := sess.Handshake(ctx)
	if err == nil {
		return newChild(proc, sess, info, pid), "", nil
	}
	if conn, ok := proc.(*remote.Conn); ok {
		return nil, "", sv.remoteStartError(ctx, spec, conn, sess, err) // backend.go
	}
	return sv.handshakeFailed(spec, proc, sess, err)
}

// sessionOptions are the options of the session of spec on a backend
// speaking proto.
func (sv *server) sessionOptions(spec *Spec, proto string) session.Options {
	return session.Options{
		Server:          spec.Name,
		Protocol:        proto,
		DiscoverTimeout: spec.DiscoverTimeout,
		ClientInfo:      sv.sup.opts.ClientInfo,
		Capabilities:    sv.clientCapabilities(),
		Logger:          sv.childLog(), // session adds the server field
		OnNotification:  sv.notificationHandler(spec.Name),
		// A change announced on a listen mcpd no longer follows reaches no
		// app, but the cache must still drop what it changed.
		OnStrayNotification: sv.observeNotification,
		OnRequest:           sv.requestHandler(), // roots.go
	}
}

// notificationHandler handles the notifications of the server name: it
// updates the cache, then passes them to the subscriptions and, for a
// server that is not an instance, to the supervisor's OnNotification.
func (sv *server) notificationHandler(name string) func(session.Notification) {
	on := sv.sup.opts.OnNotification
	return func(n session.Notification) {
		if n.Method == methodElicitComplete {
			sv.hostNotification(n) // roots.go
			return
		}
		// Invalidate before anyone hears of the change (cache.go).
		sv.observeNotification(n)
		key := ""
		if sv.inst != nil {
			key = sv.inst.key
		}
		switch {
		case n.DuringCalls:
			sv.sup.subs.OnLogDuringCalls(name, key, n.Params)
		case sv.inst != nil:
			// An instance's changes reach the streams of the apps
			// it serves alone (instances.go).
			sv.sup.subs.OnInstanceNotification(name, key, n.Method, n.Params)
		default:
			sv.sup.subs.OnNotification(name, n.Method, n.Params)
		}
		if sv.inst != nil {
			return
		}
		if on != nil {
			on(name, n)
		}
	}
}

// newChild is the running child of proc and its session after a
// handshake that returned info; stopping it fails the calls in flight
// with the cause.
func newChild(proc backend, sess *session.Session, info session.Info, pid int) *child {
	cctx, cancel := context.WithCancelCause(context.Background())
	stop := func(cause error) {
		cancel(cause)
		// Calls in flight fail now with the reason (the first one).
		sess.FailCalls(context.Cause(cctx))
	}
	return &child{proc: proc, sess: sess, info: info, pid: pid, ctx: cctx, cancel: stop}
}

// handshakeFailed reaps the child process proc whose handshake failed
// with err and says why it failed: exit is its exit status when it exited
// by itself.
func (sv *server) handshakeFailed(spec *Spec, proc backend, sess *session.Session, err error) (*child, string, error) {
	// "Kill the child on any start failure."
	exited := errors.Is(err, session.ErrClosed) || errors.Is(err, session.ErrExitedAfterProbe)
	select {
	case <-proc.Done():
		exited = true
	default:
	}
	if exited {
		// It is exiting by itself: let it, to learn its real exit status
		// (Stop escalates if it lingers).
		_ = proc.Stop()
	} else {
		proc.Kill()
	}
	<-proc.Done()
	sess.Wait()
	if !exited {
		if he := (*session.HandshakeError)(nil); errors.As(err, &he) {
			// The session names the server too: say it once.
			return nil, "", &startError{server: spec.Name, msg: fmt.Sprintf("handshake failed: %v", he.Err), err: err}
		}
		return nil, "", &startError{server: spec.Name, msg: "handshake: " + err.Error(), err: err}
	}
	exit := describeExit(proc.ExitError())
	if errors.Is(err, session.ErrExitedAfterProbe) {
		return nil, exit, err
	}
	if errors.Is(err, session.ErrClosed) {
		// The session only says the server exited, which this says
		// already; the exit status and stderr are the news.
		return nil, exit, &startError{server: spec.Name, msg: fmt.Sprintf("exited before the handshake (%s)%s", exit, runStderr(sv.ring, proc.Pid(), 5)), err: err}
	}
	return nil, exit, &startError{server: spec.Name, msg: fmt.Sprintf("exited before the handshake (%s): %v%s", exit, err, runStderr(sv.ring, proc.Pid(), 5)), err: err}
}
