package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// cmdKind is a command sent to a server's loop.
type cmdKind int

const (
	cmdAcquire cmdKind = iota // wait for a ready child
	cmdStart
	cmdStop
	cmdRestart
)

func (k cmdKind) String() string {
	switch k {
	case cmdAcquire:
		return "acquire"
	case cmdStart:
		return "start"
	case cmdStop:
		return "stop"
	default:
		return "restart"
	}
}

// command is a request to a server's loop; reply has capacity 1 so the loop
// never blocks on a caller that went away.
type command struct {
	kind  cmdKind
	ctx   context.Context // the caller's context (acquire: counts as demand while alive)
	reply chan reply
	// spec and restart are the new spec of cmdReconfigure (reload.go).
	spec    *Spec
	restart bool
}

type reply struct {
	c   *child
	err error
}

// child is one running, handshaken child process.
type child struct {
	proc backend // the process, or the remote connection
	sess *session.Session
	info session.Info
	pid  int
	// ctx is cancelled (with the reason as cause) when mcpd stops the child;
	// calls in flight on it then fail at once with that reason.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// expected is set by the loop when mcpd asked the child to stop; loop only.
	expected bool
}

// gone reports whether c's session has ended (its exit is being reported
// to the loop): it serves no more calls.
func (c *child) gone() bool {
	select {
	case <-c.sess.Done():
		return true
	default:
		return false
	}
}

// exitReport tells the loop that a child has been reaped.
type exitReport struct {
	c   *child
	err error // the process's ExitError
}

// snapshot is the part of a server's state that Status reads.
type snapshot struct {
	state        State
	pid          int
	startedAt    time.Time
	restarts     int
	info         session.Info
	lastError    string
	lastExit     string
	sandbox      string // the last child's transport.Process.Sandbox
	explicitStop bool
	nextAt       time.Time
	proc         backend
	sess         *session.Session
	// counters of children that already exited
	skipped, oversize, dropped, invalid int64
}

// server is one configured server. Its lifecycle state is owned by its loop
// goroutine (run); other goroutines talk to it through cmds. mu guards only
// the status snapshot and is never held while calling out.
type server struct {
	sup  *Supervisor
	spec Spec
	log  *zap.Logger
	ring *transport.Ring

	cmds chan command
	// loop is whether the loop goroutine runs (dormant.go), and
	// loopWanted that a command waits for it before Run; both guarded by
	// sup.mu. loopStarted is loop == loopRunning, read without the lock.
	loop        loopState
	loopWanted  bool
	loopStarted atomic.Bool
	startRes    chan startResult // capacity 1: at most one start attempt at a time
	exitRes     chan exitReport  // capacity 1: at most one watched child at a time

	// ready is the child serving requests, or nil; set by the loop only.
	// Calls read it without a round trip through the loop.
	ready atomic.Pointer[child]

	inFlight, total, failed atomic.Int64

	// pool is a remote server's HTTP connection pool, kept across
	// reconnects (backend.go).
	pool     *remote.Pool
	poolOnce sync.Once
	// transport is the transport learned for the remote config, if it is
	// not the configured one (backend.go).
	transport atomic.Pointer[learnedTransport]

	// cache holds this server's results (cache.go); it has its own lock.
	cache *cache.Cache

	// rl is the live-reload state (reload.go).
	rl reloadState
	// idle is the idle-timeout state (idle.go).
	idle idleState
	// inst is set on an instance of a shared server (instances.go); it
	// never changes.
	inst *instance
	// shared is set while the spec shares the server (instances.go);
	// sharedStopped while an operator's Stop holds its instances down.
	shared, sharedStopped atomic.Bool

	mu sync.Mutex // guards st, and spec's writes (reload.go: setSpec)
	st snapshot

	// Loop-owned state: touched only by the loop goroutine.
	state        State
	cur          *child                  // running child (ready or stopping)
	startCancel  context.CancelCauseFunc // non-nil while a start attempt runs
	waiters      []command               // acquire commands waiting for a ready child
	startWaiters []command               // start/restart commands waiting for the outcome
	stopWaiters  []command               // stop commands waiting for the child to be reaped
	exits        []time.Time             // recent unexpected exits (crash-loop window)
	timerC       <-chan time.Time        // backoff or cooldown timer
	timerStop    func() bool
	verdict      string // remembered era verdict (auto only)
	explicitStop bool
	restartNext  bool  // the next start counts as a restart
	failErr      error // why the server is failed (StateFailed only)
	startAfter   bool  // start again once cur has been reaped (Restart)
	shutting     bool
	wg           sync.WaitGroup // start attempts and child watchers
}

func newServer(s *Supervisor, spec Spec) *server {
	sv := &server{
		sup:  s,
		spec: spec,
		// Lazy: most configured servers never log a line (a lazy server
		// that is never used), and encoding the field into each core's
		// clone is most of what building a server record costs.
		log:      s.log.WithLazy(zap.String("server", spec.Name)),
		ring:     transport.NewRing(0, 0),
		cmds:     make(chan command),
		startRes: make(chan startResult, 1),
		exitRes:  make(chan exitReport, 1),
		state:    StateStopped,
		rl:       newReloadState(),
	}
	sv.st.state = StateStopped
	if spec.Invalid != "" {
		// Failed from the start, so that status says so before Run.
		sv.failErr = configError(spec)
		sv.state, sv.st.state, sv.st.lastError = StateFailed, StateFailed, sv.failErr.Error()
	}
	sv.cache = newServerCache(s, spec, sv.log)
	sv.shared.Store(isShared(spec.Share))
	return sv
}

func (sv *server) requestTimeout() time.Duration {
	sv.mu.Lock() // reload may change it (reload.go)
	d := sv.spec.RequestTimeout
	sv.mu.Unlock()
	if d > 0 {
		return d
	}
	return DefaultRequestTimeout
}

func (sv *server) update(f func(st *snapshot)) {
	sv.mu.Lock()
	f(&sv.st)
	sv.mu.Unlock()
}

func (sv *server) emit(kind EventKind, pid int, exit, errText string) {
	sv.sup.emit(Event{Server: sv.spec.Name, Instance: sv.instanceKey(), Kind: kind, Pid: pid, Exit: exit, Error: errText, Time: sv.sup.now()})
}

// setState records a transition (loop only).
func (sv *server) setState(s State) {
	if sv.state != s {
		sv.log.Debug("server state", zap.String("from", string(sv.state)), zap.String("to", string(s)))
	}
	sv.state = s
	explicit := sv.explicitStop
	sv.update(func(st *snapshot) {
		st.state = s
		st.explicitStop = explicit
		if s != StateBackoff && s != StateCrashLoop {
			st.nextAt = time.Time{}
		}
	})
}

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
		return reply{}, unavailable(nil, "server %q was removed from the config", sv.spec.Name)
	case <-ctx.Done():
		return reply{}, fmt.Errorf("%s %q: %w", kind, sv.spec.Name, context.Cause(ctx))
	}
	select {
	case r := <-cmd.reply:
		return r, nil
	case <-ctx.Done():
		if kind == cmdAcquire {
			return reply{}, fmt.Errorf("server %q not ready (state %s): %w", sv.spec.Name, sv.status().State, context.Cause(ctx))
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

// call runs req on a ready child, starting one if needed. A request that
// met an expired remote session (never processed by the server) is sent
// again once, in the new session.
func (sv *server) call(ctx context.Context, req *session.Request) (*session.Response, error) {
	resp, err := sv.callOnce(ctx, req)
	if err != nil && errors.Is(err, remote.ErrSessionExpired) && ctx.Err() == nil {
		sv.log.Debug("session expired; sending the request again in a new session", zap.String("method", req.Method))
		return sv.callOnce(ctx, req)
	}
	return resp, err
}

func (sv *server) callOnce(ctx context.Context, req *session.Request) (*session.Response, error) {
	c, err := sv.readyChild(ctx)
	if err != nil {
		return nil, err
	}
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
	if c.ctx.Err() != nil && ctx.Err() == nil {
		// mcpd stopped the child (stop, restart, shutdown): the cause says so.
		return nil, context.Cause(c.ctx)
	}
	if errors.Is(err, session.ErrClosed) && c.pid == 0 {
		// A remote server: the cause (connection refused, HTTP 500, a
		// dropped stream) is the news.
		return nil, &unavailableError{msg: fmt.Sprintf("server %q: %s failed: connection lost", sv.spec.Name, req.Method), cause: err}
	}
	if errors.Is(err, session.ErrClosed) {
		// The message says all ErrClosed says ("server exited"), once.
		return nil, &unavailableError{msg: fmt.Sprintf("server %q exited during %s", sv.spec.Name, req.Method), cause: err, causeInMsg: true}
	}
	return nil, fmt.Errorf("server %q: %s: %w", sv.spec.Name, req.Method, err)
}

// run is the server's loop; it returns after quit was closed and the child
// (if any) has been reaped.
func (sv *server) run(quit <-chan struct{}) {
	defer close(sv.rl.gone)
	defer func() {
		if sv.pool != nil {
			sv.pool.Close()
		}
	}()
	defer sv.wg.Wait()
	sv.startInitially() // invalid.go
	for !sv.shutting || sv.cur != nil || sv.startCancel != nil {
		select {
		case <-quit:
			quit = nil
			sv.shutdown()
		case cmd := <-sv.cmds:
			sv.handle(cmd)
		case r := <-sv.startRes:
			sv.onStartResult(r)
		case e := <-sv.exitRes:
			sv.onExit(e)
		case <-sv.timerC:
			sv.timerC, sv.timerStop = nil, nil
			sv.onTimer()
		case <-sv.rl.drainedC:
			sv.afterDrain()
		case <-sv.idle.c:
			sv.onIdleTimer()
		}
		sv.afterEvent()
		sv.idleSync() // idle.go
	}
	sv.idleDisarm()
	sv.replyAll(&sv.stopWaiters, reply{})
	sv.replyAll(&sv.startWaiters, reply{err: errShuttingDown})
	sv.replyAll(&sv.waiters, reply{err: errShuttingDown})
}

func (sv *server) shutdown() {
	sv.shutting = true
	sv.stopTimer()
	sv.replyAll(&sv.waiters, reply{err: errShuttingDown})
	sv.replyAll(&sv.startWaiters, reply{err: errShuttingDown})
	sv.startAfter = false
	if sv.startCancel != nil {
		sv.startCancel(errShuttingDown)
	}
	if sv.cur != nil {
		sv.stopChild(errShuttingDown)
	}
	if sv.cur != nil || sv.startCancel != nil {
		sv.setState(StateStopping)
	}
}

func (sv *server) replyAll(list *[]command, r reply) {
	for _, cmd := range *list {
		cmd.reply <- r
	}
	*list = nil
}

func (sv *server) handle(cmd command) {
	if sv.handleReload(cmd) {
		return
	}
	if sv.shutting {
		if cmd.kind == cmdStop {
			sv.stopWaiters = append(sv.stopWaiters, cmd)
			return
		}
		cmd.reply <- reply{err: errShuttingDown}
		return
	}
	if sv.spec.Invalid != "" && cmd.kind != cmdStop {
		cmd.reply <- reply{err: sv.failedError(configError(sv.spec))}
		return
	}
	if sv.spec.Disabled && cmd.kind != cmdStop {
		cmd.reply <- reply{err: unavailable(nil, "server %q is disabled in the config", sv.spec.Name)}
		return
	}
	switch cmd.kind {
	case cmdAcquire:
		sv.acquire(cmd)
	case cmdStart:
		sv.start(cmd)
	case cmdStop:
		sv.stop(cmd)
	case cmdRestart:
		sv.restart(cmd)
	}
}

func (sv *server) acquire(cmd command) {
	switch {
	case sv.sharedBase():
		cmd.reply <- reply{err: sv.sharedError()} // instances.go
	case sv.explicitStop:
		cmd.reply <- reply{err: unavailable(nil, "server %q is stopped; start it with: mcpdctl start %s", sv.spec.Name, sv.spec.Name)}
	case sv.state == StateFailed:
		cmd.reply <- reply{err: sv.failedError(sv.failErr)}
	case sv.state == StateCrashLoop:
		cmd.reply <- reply{err: sv.crashLoopError()}
	case sv.state == StateLoginRequired:
		cmd.reply <- reply{err: sv.loginError(sv.failErr)}
	case sv.state == StateReady && !sv.cur.gone():
		cmd.reply <- reply{c: sv.cur}
	default:
		// stopped (idle: started lazily, design: "restarted on the next
		// call"), starting, backoff (wait for the restart), stopping for a
		// restart.
		sv.waiters = append(sv.waiters, cmd)
		if sv.state == StateStopped && sv.cur == nil && sv.startCancel == nil {
			sv.beginStart()
		}
	}
}

func (sv *server) start(cmd command) {
	sv.explicitStop = false
	switch sv.state {
	case StateReady:
		sv.setState(StateReady)
		cmd.reply <- reply{}
		return
	case StateStarting:
	case StateStopping:
		// An explicit stop is in progress: start once it has been reaped.
		sv.startAfter = true
		sv.setState(StateStopping)
	default: // stopped, backoff, crashloop, failed
		sv.exits = nil
		sv.forgetVerdictIfBroken()
		sv.beginStart()
	}
	sv.startWaiters = append(sv.startWaiters, cmd)
}

func (sv *server) stop(cmd command) {
	sv.explicitStop = true
	sv.startAfter = false
	sv.stopTimer()
	errStopped := unavailable(nil, "server %q was stopped", sv.spec.Name)
	sv.replyAll(&sv.waiters, reply{err: errStopped})
	sv.replyAll(&sv.startWaiters, reply{err: errStopped})
	switch {
	case sv.cur != nil:
		sv.stopChild(errStopped)
		sv.setState(StateStopping)
		sv.stopWaiters = append(sv.stopWaiters, cmd)
	case sv.startCancel != nil:
		sv.startCancel(errStopped)
		sv.setState(StateStopping)
		sv.stopWaiters = append(sv.stopWaiters, cmd)
	default:
		prev := sv.state
		sv.setState(StateStopped)
		if prev != StateStopped {
			sv.emit(EventStopped, 0, "", "")
		}
		cmd.reply <- reply{}
	}
}

// forgetVerdictIfBroken drops the remembered era verdict of a server that
// failed or is crash-looping: the operator who starts it again has fixed
// something, and the era is negotiated afresh. (A running server keeps
// its verdict across restarts.)
func (sv *server) forgetVerdictIfBroken() {
	if sv.state == StateFailed || sv.state == StateCrashLoop {
		sv.verdict = ""
	}
}

func (sv *server) restart(cmd command) {
	sv.explicitStop = false
	sv.exits = nil
	sv.forgetVerdictIfBroken()
	sv.startWaiters = append(sv.startWaiters, cmd)
	switch {
	case sv.cur != nil:
		sv.restartNext = true
		if !sv.cur.expected {
			sv.stopChild(unavailable(nil, "server %q is restarting", sv.spec.Name))
		}
		sv.startAfter = true
		sv.setState(StateStopping)
	case sv.startCancel != nil:
		// Not running yet: the start under way is the restart.
		sv.setState(StateStarting)
	default:
		// Nothing runs: a plain start (a restart only if it follows a crash).
		sv.beginStart()
	}
}

// stopChild asks the running child to stop (loop only); its watcher runs
// the stop sequence and reports the exit.
func (sv *server) stopChild(cause error) {
	c := sv.cur
	sv.ready.Store(nil)
	if c.expected {
		return
	}
	c.expected = true
	sv.log.Info("stopping server", zap.Int("pid", c.pid))
	c.cancel(cause)
}

func (sv *server) stopTimer() {
	if sv.timerStop != nil {
		sv.timerStop()
	}
	sv.timerC, sv.timerStop = nil, nil
}

func (sv *server) setTimer(d time.Duration) {
	sv.stopTimer()
	sv.timerC, sv.timerStop = sv.sup.after(d)
	at := sv.sup.now().Add(d)
	sv.update(func(st *snapshot) { st.nextAt = at })
}

// protocol is the era negotiation mode for the next start: the configured
// one, or the remembered verdict under auto.
func (sv *server) protocol() string {
	switch sv.spec.Protocol {
	case session.ProtocolModern, session.ProtocolLegacy:
		return sv.spec.Protocol
	}
	if sv.verdict != "" {
		return sv.verdict
	}
	return session.ProtocolAuto
}

func (sv *server) beginStart() {
	if sv.spec.Invalid != "" {
		sv.failInvalid() // a start that became due after the config broke
		return
	}
	if sv.sharedBase() {
		// Its instances run the children (instances.go).
		sv.setState(StateStopped)
		sv.replyAll(&sv.waiters, reply{err: sv.sharedError()})
		sv.replyAll(&sv.startWaiters, reply{})
		return
	}
	sv.stopTimer()
	if sv.restartNext {
		sv.restartNext = false
		sv.update(func(st *snapshot) { st.restarts++ })
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	sv.startCancel = cancel
	sv.setState(StateStarting)
	proto := sv.protocol()
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		sv.startRes <- sv.attempt(ctx, proto)
	}()
}

func (sv *server) onStartResult(r startResult) {
	sv.startCancel(nil)
	sv.startCancel = nil
	if r.verdict != "" {
		sv.verdict = r.verdict
	}
	if r.c != nil {
		sv.onStarted(r.c)
		return
	}
	sv.update(func(st *snapshot) {
		st.pid = 0
		st.lastError = r.err.Error()
		if r.exit != "" {
			st.lastExit = r.exit
		}
	})
	switch {
	case loginRequired(r.err) && !r.canceled && !sv.shutting && !sv.explicitStop:
		sv.needLogin(r.err)
	case r.canceled || sv.shutting || sv.explicitStop:
		sv.setState(StateStopped)
		sv.emit(EventStopped, 0, "", "")
		sv.replyAll(&sv.stopWaiters, reply{})
		if sv.startAfter && !sv.shutting {
			sv.startAfter = false
			sv.beginStart()
		}
	case r.permanent:
		sv.log.Error("server failed", zap.Error(r.err))
		sv.setState(StateFailed)
		sv.emit(EventFailed, 0, "", r.err.Error())
		sv.failErr = r.err
		err := sv.failedError(r.err)
		sv.replyAll(&sv.waiters, reply{err: err})
		sv.replyAll(&sv.startWaiters, reply{err: err})
	default:
		// "Crash-on-start" and handshake timeouts count as unexpected exits.
		sv.log.Warn("server start failed", zap.Error(r.err), zap.String("exit", r.exit))
		sv.emit(EventExited, 0, r.exit, r.err.Error())
		sv.afterUnexpectedExit(r.err)
		sv.replyAll(&sv.startWaiters, reply{err: r.err})
	}
}

func (sv *server) onStarted(c *child) {
	sv.cur = c
	sv.wg.Add(1)
	go sv.watch(c)
	if sv.spec.Protocol == "" || sv.spec.Protocol == session.ProtocolAuto {
		// "The verdict is remembered for that server across restarts."
		sv.verdict = string(c.info.Era)
	}
	if sv.shutting || sv.explicitStop {
		// A stop arrived while the handshake was finishing.
		cause := errShuttingDown
		if !sv.shutting {
			cause = unavailable(nil, "server %q was stopped", sv.spec.Name)
		}
		sv.stopChild(cause)
		sv.setState(StateStopping)
		return
	}
	now := sv.sup.now()
	sv.update(func(st *snapshot) {
		st.pid = c.pid
		st.startedAt = now
		st.info = c.info
		st.proc = c.proc
		st.sess = c.sess
		st.lastError = ""
	})
	sv.setState(StateReady)
	sv.ready.Store(c)
	sv.log.Info("server ready", zap.Int("pid", c.pid), zap.String("era", string(c.info.Era)),
		zap.String("protocol_version", c.info.ProtocolVersion))
	sv.emit(EventReady, c.pid, "", "")
	sv.replyAll(&sv.waiters, reply{c: c})
	sv.replyAll(&sv.startWaiters, reply{})
}

// watch waits for c to end (stdout closed, process exited, or mcpd asking it
// to stop), runs the stop sequence if the process is still alive, and
// reports the reaped child to the loop.
func (sv *server) watch(c *child) {
	defer sv.wg.Done()
	select {
	case <-c.sess.Done():
	case <-c.proc.Done():
	case <-c.ctx.Done():
	}
	select {
	case <-c.proc.Done():
	default:
		// MCP stdio shutdown: close stdin, SIGTERM, SIGKILL (transport).
		if err := c.proc.Stop(); err != nil {
			sv.log.Debug("stop sequence", zap.Int("pid", c.pid), zap.Error(err))
		}
	}
	<-c.proc.Done()
	c.sess.Wait()
	sv.exitRes <- exitReport{c: c, err: c.proc.ExitError()}
}

func (sv *server) onExit(e exitReport) {
	c := e.c
	if sv.cur == c {
		sv.cur = nil
	}
	sv.ready.CompareAndSwap(c, nil)
	exit := sv.idleExit(c, describeEnd(c.proc, e.err)) // idle.go
	hung := c.proc.Hung()
	// Calls still returning from this child report the exit (a stopped
	// child's context was already cancelled with the stop reason).
	switch {
	case hung != nil && !c.expected:
		c.cancel(sv.hungError(hung))
	case c.pid == 0 && loginRequired(e.err):
		c.cancel(sv.loginError(e.err)) // a remote server refused the token
	default:
		c.cancel(unavailable(nil, "server %q exited (%s)", sv.spec.Name, exit))
	}
	ps, ss := c.proc.Stats(), c.sess.Stats()
	sv.update(func(st *snapshot) {
		st.pid = 0
		st.startedAt = time.Time{}
		st.lastExit = exit
		st.proc, st.sess = nil, nil
		st.skipped += ps.LinesSkipped
		st.oversize += ps.LinesOversize
		st.dropped += ss.ResponsesDropped
		st.invalid += ss.MessagesInvalid
	})
	if c.expected {
		sv.log.Info("server stopped", zap.Int("pid", c.pid), zap.String("exit", exit))
		sv.setState(StateStopped)
		sv.emit(EventStopped, c.pid, exit, "")
		sv.replyAll(&sv.stopWaiters, reply{})
		if (sv.startAfter || sv.demand()) && !sv.shutting && !sv.explicitStop {
			sv.startAfter = false
			sv.beginStart()
		}
		return
	}
	err := fmt.Errorf("server %q exited unexpectedly (%s)", sv.spec.Name, exit)
	if c.pid == 0 {
		err = fmt.Errorf("connection to server %q lost: %s", sv.spec.Name, exit)
	}
	if sv.remoteExit(c, e.err, err) { // remote.go
		return
	}
	if hung != nil {
		// Killed by mcpd, but for the child's fault: a crash.
		err = fmt.Errorf("%w (stdinTimeout); it was killed (%s)", hung, exit)
	}
	sv.update(func(st *snapshot) { st.lastError = err.Error() })
	sv.log.Warn("server exited", zap.Int("pid", c.pid), zap.String("exit", exit))
	sv.emit(EventExited, c.pid, exit, err.Error())
	sv.afterUnexpectedExit(err)
}

// afterUnexpectedExit applies the crash-loop bound and the restart policy
// (loop only). "N unexpected exits within a window (default 5 in 60 s) →
// crashloop"; otherwise back off exponentially and restart if there is demand.
func (sv *server) afterUnexpectedExit(err error) {
	now := sv.sup.now()
	window := sv.sup.opts.CrashLoopWindow
	kept := sv.exits[:0]
	for _, t := range sv.exits {
		if now.Sub(t) < window {
			kept = append(kept, t)
		}
	}
	sv.exits = append(kept, now)
	sv.restartNext = true

	if len(sv.exits) >= sv.sup.opts.CrashLoopMax {
		sv.log.Error("server in crash loop", zap.Int("exits", len(sv.exits)),
			zap.Duration("window", window), zap.Duration("cooldown", sv.sup.opts.CrashLoopCooldown))
		sv.setState(StateCrashLoop)
		sv.setTimer(sv.sup.opts.CrashLoopCooldown)
		cerr := sv.crashLoopErrorAt(len(sv.exits)) // after setTimer: it says how long
		sv.emit(EventCrashLoop, 0, sv.lastExit(), cerr.Error())
		sv.replyAll(&sv.waiters, reply{err: cerr})
		return
	}
	if sv.spec.Restart == RestartNever {
		sv.setState(StateStopped)
		sv.replyAll(&sv.waiters, reply{err: unavailable(nil, "%s; restart policy is never", err)})
		return
	}
	d := sv.sup.bo.delay(len(sv.exits))
	sv.log.Info("restarting", zap.Duration("backoff", d), zap.Int("recent_exits", len(sv.exits)))
	sv.setState(StateBackoff)
	sv.setTimer(d)
	sv.emit(EventRestarting, 0, "", "")
}

func (sv *server) onTimer() {
	switch sv.state {
	case StateBackoff:
		if sv.demand() {
			sv.beginStart()
			return
		}
		// No demand: idle until the next call starts it.
		sv.setState(StateStopped)
	case StateCrashLoop:
		sv.log.Info("crash loop cooldown over")
		sv.exits = nil
		// Streams opened during the crash loop wait for the server (their
		// acknowledgement said why): they are demand, as a caller is.
		wanted := sv.spec.Autostart || sv.spec.Restart == RestartAlways || sv.subsDemand()
		if sv.spec.Restart != RestartNever && !sv.spec.Disabled && wanted {
			sv.beginStart()
			return
		}
		sv.setState(StateStopped)
	}
}

// demand reports whether a restart is wanted now: autostart, restart=always,
// or callers waiting for the server.
func (sv *server) demand() bool {
	if sv.spec.Disabled || sv.spec.Invalid != "" { // by a reload (reload.go)
		return false
	}
	if sv.spec.Autostart || sv.spec.Restart == RestartAlways {
		return true
	}
	live := sv.waiters[:0]
	for _, w := range sv.waiters {
		if w.ctx.Err() == nil {
			live = append(live, w)
		} else {
			w.reply <- reply{err: w.ctx.Err()}
		}
	}
	clear(sv.waiters[len(live):])
	sv.waiters = live
	return len(live) > 0
}

func (sv *server) lastError() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.st.lastError
}

func (sv *server) lastExit() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.st.lastExit
}

// failedError is the error of a call to a failed server: what failed
// (cause, which for a start failure or a command that cannot start already
// names the server) and what to do.
func (sv *server) failedError(cause error) error {
	if cause == nil { // not expected: failErr is set with the state
		cause = errors.New(sv.lastError())
	}
	var ce *ConfigError
	if errors.As(cause, &ce) {
		return &unavailableError{msg: cause.Error(), cause: cause, causeInMsg: true}
	}
	msg := fmt.Sprintf("server %q failed: %s; fix it, then run: mcpdctl restart %s", sv.spec.Name, cause, sv.spec.Name)
	if errors.Is(cause, transport.ErrCannotStart) || strings.HasPrefix(cause.Error(), fmt.Sprintf("start %q: ", sv.spec.Name)) {
		// The cause names the server already.
		msg = fmt.Sprintf("%s; fix it, then run: mcpdctl restart %s", cause, sv.spec.Name)
	}
	return &unavailableError{msg: msg, cause: cause, causeInMsg: true}
}

func (sv *server) crashLoopError() error { return sv.crashLoopErrorAt(len(sv.exits)) }

// crashLoopErrorAt names the server, the last exit status, what to do and
// the last stderr lines (design: "requests fail fast with UNAVAILABLE naming
// the server, the exit status and the last stderr lines").
func (sv *server) crashLoopErrorAt(n int) error {
	sv.mu.Lock()
	last, nextAt := sv.st.lastExit, sv.st.nextAt
	sv.mu.Unlock()
	wait := ""
	if !nextAt.IsZero() {
		wait = fmt.Sprintf(" for %s", max(nextAt.Sub(sv.sup.now()), 0).Round(time.Second))
	}
	if last == "" {
		last = "unknown"
	}
	return unavailable(nil, "server %q is crash-looping (%d exits within %s, last exit: %s); held down%s or until: mcpdctl restart %s%s",
		sv.spec.Name, n, sv.sup.opts.CrashLoopWindow, last, wait, sv.spec.Name, stderrTail(sv.ring, 5))
}

// status returns the snapshot as a Status; it takes only sv.mu, briefly.
func (sv *server) status() Status {
	sv.mu.Lock()
	st := sv.st
	spec := sv.spec // reload may change it (reload.go)
	sv.mu.Unlock()
	out := Status{
		Name:               sv.spec.Name,
		State:              st.state,
		Pid:                st.pid,
		StartedAt:          st.startedAt,
		Restarts:           st.restarts,
		LastError:          st.lastError,
		LastExit:           st.lastExit,
		Autostart:          spec.Autostart,
		Disabled:           spec.Disabled,
		ExplicitlyStopped:  st.explicitStop,
		CallsInFlight:      sv.inFlight.Load(),
		CallsTotal:         sv.total.Load(),
		CallsFailed:        sv.failed.Load(),
		Cache:              sv.cache.Stats(),
		ToolChangesPending: sv.pinPending(),
		LinesSkipped:       st.skipped,
		LinesOversize:      st.oversize,
		ResponsesDropped:   st.dropped,
		MessagesInvalid:    st.invalid,
		Command:            strings.Join(append([]string{spec.Command}, spec.Args...), " "),
		Sandbox:            st.sandbox,
		Share:              spec.Share,
		MaxInstances:       spec.MaxInstances,
	}
	if sv.inst != nil {
		out.Instance, out.Root = sv.inst.key, sv.inst.root
	}
	if spec.Remote != nil {
		out.Command = remote.Redact(spec.Remote.URL)
		out.URL = out.Command
	}
	if spec.Invalid != "" && st.state == StateFailed {
		out.ConfigError = spec.Invalid
	}
	if st.state == StateReady {
		out.Era = st.info.Era
		out.ProtocolVersion = st.info.ProtocolVersion
		out.ServerInfo = st.info.ServerInfo
		out.Capabilities = st.info.Capabilities
		out.Instructions = st.info.Instructions
	}
	if st.proc != nil {
		ps := st.proc.Stats()
		out.LinesSkipped += ps.LinesSkipped
		out.LinesOversize += ps.LinesOversize
	}
	if st.sess != nil {
		ss := st.sess.Stats()
		out.ResponsesDropped += ss.ResponsesDropped
		out.MessagesInvalid += ss.MessagesInvalid
	}
	if !st.nextAt.IsZero() {
		out.NextRestartIn = max(st.nextAt.Sub(sv.sup.now()), 0)
	}
	if l := sv.ring.Last(1); len(l) > 0 {
		out.LastStderrLine = l[0].Text
	}
	return out
}

// hungError is the error of calls on a child that stopped reading its
// stdin for its stdinTimeout; the transport killed it.
func (sv *server) hungError(hung error) error {
	if sv.currentSpec().Restart == RestartNever {
		return unavailable(nil, "%s; it was killed (restart policy is never)", hung)
	}
	return unavailable(nil, "%s; restarting it", hung)
}

// describeExit renders a process's exit error ("exit status 1",
// "signal: killed").
func describeExit(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var le *transport.LimitExitError
	if errors.As(err, &le) {
		return le.Reason
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.String()
	}
	return err.Error()
}
