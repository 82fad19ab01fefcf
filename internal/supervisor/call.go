package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// send delivers a start/stop/restart command and waits for its outcome.
func (sv *server) send(ctx context.Context, kind cmdKind) error {
	r, err := sv.roundTrip(ctx, kind)
	if err != nil {
		return err
	}
	return r.err
}

func (sv *server) roundTrip(ctx context.Context, kind cmdKind) (reply, error) {
	if sv.sup.shuttingDown() {
		return reply{}, errShuttingDown
	}
	cmd := command{kind: kind, ctx: ctx, reply: make(chan reply, 1)}
	sv.wake() // dormant.go
	select {
	case sv.cmds <- cmd:
	case <-sv.sup.quit:
		return reply{}, errShuttingDown
	case <-sv.rl.gone:
		return reply{}, serverUnavailable(sv.spec.Name, " was removed from the config")
	case <-ctx.Done():
		return reply{}, fmt.Errorf("%s %q: %w", kind, sv.spec.Name, context.Cause(ctx))
	}
	select {
	case r := <-cmd.reply:
		return r, nil
	case <-ctx.Done():
		if kind == cmdAcquire {
			return reply{}, fmt.Errorf("server %q not ready (%s): %w", sv.spec.Name, sv.notReady(), context.Cause(ctx))
		}
		return reply{}, fmt.Errorf("%s %q: waiting (state %s): %w", kind, sv.spec.Name, sv.status().State, context.Cause(ctx))
	}
}

// readyChild returns the ready child, asking the loop to start one (and
// waiting for it within ctx) when there is none.
func (sv *server) readyChild(ctx context.Context) (*child, error) {
	if c := sv.ready.Load(); c != nil && !c.gone() {
		return c, nil
	}
	r, err := sv.roundTrip(ctx, cmdAcquire)
	if err != nil {
		return nil, err
	}
	return r.c, r.err
}

// call runs req on a ready child, starting one if needed. A request the
// remote server refused unprocessed (it met an expired session) is sent
// again once, in the new session; one the server may have processed is
// never sent twice.
func (sv *server) call(ctx context.Context, req *session.Request) (*session.Response, error) {
	c, err := sv.readyChild(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := sv.callOn(ctx, c, req)
	if err != nil && errors.Is(err, remote.ErrNotProcessed) && ctx.Err() == nil {
		sv.log.Debug("session expired; sending the request again in a new session", zap.String("method", req.Method))
		select { // the old session ends right after the 404 was seen
		case <-c.sess.Done():
		case <-ctx.Done():
			return nil, err
		}
		if c, err = sv.readyChild(ctx); err != nil {
			return nil, err
		}
		return sv.callOn(ctx, c, req)
	}
	return resp, err
}

// callOn runs req on child c.
func (sv *server) callOn(ctx context.Context, c *child, req *session.Request) (*session.Response, error) {
	if sv.sup.shuttingDown() {
		return nil, errShuttingDown
	}
	// When mcpd stops the child, c.cancel fails the session's calls in
	// flight with the reason (start.go), so a call needs no context of its
	// own watching c.ctx.
	resp, err := c.sess.Call(ctx, req)
	if err == nil {
		return resp, nil
	}
	if ctx.Err() == nil {
		if hung := c.proc.Hung(); hung != nil {
			// It stopped reading its stdin: killed, and restarted as after a crash.
			return nil, sv.hungError(hung)
		}
	}
	if c.pid == 0 && (loginRequired(err) || loginRequired(context.Cause(c.ctx))) {
		// The remote server refused the token mid-session: the call fails
		// as every call after it will, saying which login helps, whether
		// it saw the refusal itself or the session ended of it first.
		return nil, sv.loginError(err)
	}
	if c.ctx.Err() != nil && ctx.Err() == nil && !errors.Is(context.Cause(c.ctx), errExited) {
		// mcpd stopped the child (stop, restart, shutdown): the cause says
		// so. A child that exited by itself is said below, with the call
		// it ended, however soon its exit was seen.
		return nil, context.Cause(c.ctx)
	}
	if errors.Is(err, session.ErrClosed) && c.pid == 0 {
		// A remote server: the cause (connection refused, HTTP 500, a
		// dropped stream) is the news.
		msg := fmt.Sprintf("server %q: %s failed: connection lost", sv.spec.Name, req.Method)
		if why := c.proc.ExitError(); why != nil {
			// Why the connection ended, said once (the session's error
			// repeats the method and the server around it).
			msg += ": " + strings.TrimPrefix(why.Error(), fmt.Sprintf("server %q: ", sv.spec.Name))
			return nil, &unavailableError{msg: msg, cause: err, causeInMsg: true, server: sv.spec.Name}
		}
		return nil, &unavailableError{msg: msg, cause: err, server: sv.spec.Name}
	}
	if errors.Is(err, session.ErrClosed) {
		// The message says all ErrClosed says ("server exited"), once.
		return nil, &unavailableError{msg: fmt.Sprintf("server %q exited during %s", sv.spec.Name, req.Method), cause: err, causeInMsg: true, server: sv.spec.Name}
	}
	var herr *remote.HTTPError
	if errors.As(err, &herr) {
		// It names the server and the method already.
		return nil, &serverError{server: sv.spec.Name, err: &rewordedError{msg: herr.Error(), err: err}}
	}
	return nil, &serverError{server: sv.spec.Name, err: fmt.Errorf("server %q: %s: %w", sv.spec.Name, req.Method, err)}
}
