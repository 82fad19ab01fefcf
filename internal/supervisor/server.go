package supervisor

import (
	"context"
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
	failedStarts int                     // start attempts failed in a row since a child was last ready
	lastStartErr error                   // why the last of them failed
	net          netState                // network failures of a remote server (netfail.go)
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
		cmd.reply <- reply{err: serverUnavailable(sv.spec.Name, " is disabled in the config")}
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
		cmd.reply <- reply{err: serverUnavailable(sv.spec.Name, " is stopped; start it with: mcpdctl start %s", sv.spec.Name)}
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
		idle := sv.cur == nil && sv.startCancel == nil
		// A remote server waiting out a network failure is tried at once
		// by a call: a server that is back is used by the next call.
		if idle && (sv.state == StateStopped || sv.netBackoff()) {
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
		sv.forgetExits()
		sv.forgetVerdictIfBroken()
		sv.beginStart()
	}
	sv.startWaiters = append(sv.startWaiters, cmd)
}

func (sv *server) stop(cmd command) {
	sv.explicitStop = true
	sv.startAfter = false
	sv.stopTimer()
	errStopped := serverUnavailable(sv.spec.Name, " was stopped")
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
	sv.forgetExits()
	sv.forgetVerdictIfBroken()
	sv.startWaiters = append(sv.startWaiters, cmd)
	switch {
	case sv.cur != nil:
		sv.restartNext = true
		if !sv.cur.expected {
			sv.stopChild(serverUnavailable(sv.spec.Name, " is restarting"))
		}
		sv.startAfter = true
		sv.setState(StateStopping)
	case sv.startCancel != nil:
		// Not running yet (perhaps stuck in its handshake): the start
		// under way is cancelled, and a new one begins once it has ended.
		sv.startAfter = true
		sv.startCancel(serverUnavailable(sv.spec.Name, " is restarting"))
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
