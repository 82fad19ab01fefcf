package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Timing of the upstream loop.
const (
	// defaultCallTimeout is Options.CallTimeout's default.
	defaultCallTimeout = 30 * time.Second
	// relistenDelay spaces out re-opening a listen the server closed.
	relistenDelay = time.Second
	// closeGrace is how long a switch waits for the server to close the
	// cancelled listen (servers that send nothing after a cancel exist).
	closeGrace = time.Second
)

// upstream aggregates what every stream wants from one server into one
// upstream subscription on its live child. Its state is owned by its loop
// goroutine (run); other goroutines bump the wanted version and kick it.
type upstream struct {
	m    *Manager
	name string // the server
	inst string // the key of the instance of the server, "" for its one child (instances.go)
	log  *zap.Logger
	kick chan struct{} // capacity 1
	// nudged is set by a lifecycle event (a child may be ready again) and
	// by a change of interest (new demand may start a server that was
	// unavailable, e.g. one whose crash-loop cool-down ended without an
	// event): acquiring the child is tried again.
	nudged atomic.Bool
	// relisted is set when a legacy child announced a resources list
	// change while it had refused URIs (legacy.go): they are tried again.
	relisted atomic.Bool
	// refusing is set while refused holds a URI.
	refusing atomic.Bool
	// probed receives the answer of the probe (capacity 1: one is out at
	// a time).
	probed chan probeResult

	mu      sync.Mutex // guards the fields below
	version uint64     // bumped on every change of interest
	applied uint64     // version the last reconcile applied
	ack     ServerAck  // what the server acknowledged for the union
	waiters []waiter
	gone    string // why the upstream was retired (reload.go); empty while it runs
	retired bool   // removed from the manager as idle (dropIdle): take no more interest
	// acquiring ends the wait for a child that reconcile is in, when the
	// interest changes: a child that never gets ready (stuck in its
	// handshake) must not be waited for, and so wanted, after its last
	// subscriber left.
	acquiring context.CancelFunc
	// live is set when the last reconcile applied the streams' union on
	// a live child (ack is that child's), and cleared when it resolves
	// otherwise, the child is lost or its listen ends: covers needs it.
	live bool

	// stop ends the loop of this upstream alone (set before it starts).
	stop context.CancelFunc

	// Loop-owned.
	child          Child
	subscribedURIs []string // legacy: URIs subscribed on child, sorted
	listen         Listener // modern: the current listen
	listenKey      string   // its filter
	listenGen      uint64
	zombie         Listener // a previous listen deliberately left open (see applyModern)
	cut            cutover  // which listen's notifications are delivered (cutover.go)
	heldWake       chan struct{}
	heldTimer      *time.Timer
	established    bool // something was subscribed upstream on a child: a new child is a restart
	waitEvent      bool // acquiring failed; wait for a lifecycle event or a change of interest
	// refused holds the URIs whose resources/subscribe the legacy child
	// answered with an error; they are not sent again until the URI set
	// wanted (refusedFor) changes, the child is replaced or it announces
	// a resources list change (legacy.go).
	refused    map[string]bool
	refusedFor []string
	// probe is the request that waits, off the loop, for a stalled legacy
	// child to answer again (legacy.go); nil when none is out.
	probe   *probe
	retryAt time.Time
	timer   *time.Timer
}

type waiter struct {
	v  uint64
	ch chan struct{}
}

func newUpstream(m *Manager, t Target) *upstream {
	log := m.log.With(zap.String("server", t.Server))
	if t.Instance != "" {
		log = log.With(zap.String("instance", t.Instance))
	}
	return &upstream{
		m:        m,
		name:     t.Server,
		inst:     t.Instance,
		log:      log,
		kick:     make(chan struct{}, 1),
		heldWake: make(chan struct{}, 1),
		probed:   make(chan probeResult, 1),
	}
}

func (u *upstream) target() Target { return Target{u.name, u.inst} }

// bump is changed, unless the upstream was dropped as idle: it reports
// false then, and the caller needs a new one.
func (u *upstream) bump() (uint64, bool) {
	u.mu.Lock()
	if u.retired {
		u.mu.Unlock()
		return 0, false
	}
	u.version++
	v := u.version
	if u.acquiring != nil {
		u.acquiring()
	}
	u.mu.Unlock()
	u.nudge()
	return v, true
}

// changed records a change of interest and wakes the loop; it returns the
// version whose acknowledgement to wait for.
func (u *upstream) changed() uint64 {
	u.mu.Lock()
	u.version++
	v := u.version
	if u.acquiring != nil {
		u.acquiring()
	}
	u.mu.Unlock()
	u.nudge()
	return v
}

func (u *upstream) nudge() {
	u.nudged.Store(true)
	u.wake()
}

func (u *upstream) wake() {
	select {
	case u.kick <- struct{}{}:
	default:
	}
}

// wait returns the acknowledgement once version v has been applied, or an
// ack with an error when ctx ends first.
func (u *upstream) wait(ctx context.Context, v uint64) ServerAck {
	u.mu.Lock()
	if u.gone != "" {
		u.mu.Unlock()
		return ServerAck{Server: u.name, Error: u.gone}
	}
	if u.applied >= v {
		a := u.ack
		u.mu.Unlock()
		return a
	}
	w := waiter{v: v, ch: make(chan struct{})}
	u.waiters = append(u.waiters, w)
	u.mu.Unlock()
	select {
	case <-w.ch:
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.gone != "" {
			return ServerAck{Server: u.name, Error: u.gone}
		}
		return u.ack
	case <-ctx.Done():
		u.mu.Lock()
		why := "it did not answer"
		if u.acquiring != nil {
			why = "it is still starting"
		}
		u.mu.Unlock()
		return ServerAck{Server: u.name, Error: "server " + quote(u.name) + " did not acknowledge the subscription in time: " + why}
	}
}

// covers returns the acknowledgement of the subscription in place when it
// already holds everything w asks for, and no change of interest is
// waiting: a stream that wants only that changes nothing upstream, and
// need not wait for a reconcile (which reads every open stream). It
// reports false otherwise: while only mcpd's own listen is up (a first
// app's demand must be reconciled, and reported), and while the child or
// listen it acknowledged is gone.
func (u *upstream) covers(w wants) (ServerAck, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	a := u.ack
	if u.gone != "" || u.retired || !u.live || u.applied != u.version || a.Error != "" ||
		w.tools && !a.ToolsListChanged || w.prompts && !a.PromptsListChanged ||
		w.resources && !a.ResourcesListChanged || w.logs && !a.Logs {
		return ServerAck{}, false
	}
	for _, uri := range w.uris {
		if _, found := slices.BinarySearch(a.URIs, uri); !found {
			return ServerAck{}, false
		}
	}
	return a, true
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

// resolve publishes the ack of version v and releases its waiters.
func (u *upstream) resolve(v uint64, a ServerAck) { u.resolveLive(v, a, false) }

// resolveLive is resolve; live says the ack is of the streams' union
// applied on a live child (covers).
func (u *upstream) resolveLive(v uint64, a ServerAck, live bool) {
	a.Server = u.name
	u.mu.Lock()
	u.applied, u.ack, u.live = v, a, live
	kept := u.waiters[:0]
	var done []waiter
	for _, w := range u.waiters {
		if w.v <= v {
			done = append(done, w)
		} else {
			kept = append(kept, w)
		}
	}
	u.waiters = kept
	u.mu.Unlock()
	for _, w := range done {
		close(w.ch)
	}
}

// releaseWaiters answers every pending wait once the loop has ended (the
// upstream was retired, or the manager closed).
func (u *upstream) releaseWaiters() {
	u.mu.Lock()
	if u.gone == "" {
		u.gone = "server " + quote(u.name) + ": subscriptions are shutting down"
	}
	ws := u.waiters
	u.waiters = nil
	u.mu.Unlock()
	for _, w := range ws {
		close(w.ch)
	}
}

func (u *upstream) run(ctx context.Context) {
	defer func() {
		if u.timer != nil {
			u.timer.Stop()
		}
		if u.heldTimer != nil {
			u.heldTimer.Stop()
		}
		u.cancelListens("mcpd is shutting down")
		u.endProbe()
		u.releaseWaiters()
	}()
	for {
		var childDone, listenDone <-chan struct{}
		if u.child != nil {
			childDone = u.child.Done()
		}
		if u.listen != nil {
			listenDone = u.listen.Done()
		}
		var timerC, heldC <-chan time.Time
		if u.timer != nil {
			timerC = u.timer.C
		}
		if u.heldTimer != nil {
			heldC = u.heldTimer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-u.heldWake:
			if u.heldTimer == nil {
				u.heldTimer = time.NewTimer(dupWindow)
			}
			continue
		case <-heldC:
			u.heldTimer = nil
			u.releaseHeld(false)
			continue
		case <-u.kick:
		case <-childDone:
			u.lost()
		case <-listenDone:
			u.log.Debug("listen ended")
			u.notLive()
			u.listen, u.listenKey = nil, ""
			u.promise(ServerAck{})
			u.retryAt = time.Now().Add(relistenDelay)
			u.arm(relistenDelay)
		case <-timerC:
			u.timer = nil
		case r := <-u.probed:
			u.answered(r)
		}
		if u.nudged.Swap(false) {
			u.waitEvent = false
		}
		u.reconcile(ctx)
	}
}

// notLive says the subscription acknowledged last is not in place any
// more (its child or listen is gone): new streams wait for a reconcile.
func (u *upstream) notLive() {
	u.mu.Lock()
	u.live = false
	u.mu.Unlock()
}

func (u *upstream) arm(d time.Duration) {
	if u.timer != nil {
		u.timer.Stop()
	}
	u.timer = time.NewTimer(d)
}

// lost forgets a child that exited: its subscriptions died with it.
func (u *upstream) lost() {
	u.log.Debug("child gone", zap.Int("pid", u.child.Pid()))
	u.notLive()
	u.endProbe()
	u.child, u.subscribedURIs = nil, nil
	u.refused, u.refusedFor = nil, nil
	u.refusing.Store(false)
	u.listen, u.listenKey, u.zombie = nil, "", nil
	// What the listens of the dead child still held is not delivered: the
	// restart sends synthetic change events.
	u.cut.reset()
}

// reconcile brings the upstream subscription on the live child in line with
// the union of what the streams want.
func (u *upstream) reconcile(ctx context.Context) {
	u.mu.Lock()
	v := u.version
	u.mu.Unlock()
	want, scope := u.m.union(u.target())
	if !want.any() {
		// mcpd's own listen (own.go) may stay; it is not demand. Its
		// acknowledgement is what the next app's subscription starts from
		// (each app sees only what it asked for).
		a, own := u.reconcileOwn(ctx)
		if !own {
			u.release(ctx)
		}
		u.resolve(v, a)
		// (Not while a stalled child holds unsubscribes not sent yet:
		// its probe's answer sends them.)
		if u.inst != "" && !own && u.probe == nil && u.m.dropIdle(u, v) { // instances.go
			u.stop()
		}
		return
	}
	restarted := false
	if u.child == nil {
		if u.waitEvent {
			u.mu.Lock()
			a := u.ack
			u.mu.Unlock()
			u.resolve(v, a)
			return
		}
		c, err := u.acquireFor(ctx, v, scope)
		if ctx.Err() != nil {
			return
		}
		if errors.Is(err, errInterestChanged) {
			return // the loop reconciles the new interest (changed kicked it)
		}
		if err != nil {
			u.log.Debug("server unavailable for subscriptions", zap.Error(err))
			u.waitEvent = true
			u.resolve(v, ServerAck{Error: err.Error()})
			return
		}
		if exited(c) {
			// Acquired just as it exited: wait for the supervisor's next event.
			u.waitEvent = true
			return
		}
		u.child, u.subscribedURIs = c, nil
		u.retryAt = time.Time{} // a listen ended with the old child: no delay
		restarted = u.established
	}
	var a ServerAck
	if u.child.Modern() {
		a = u.applyModern(ctx, u.withOwn(want))
	} else {
		resources, tasks := splitTasks(want.uris) // tasks.go
		want.uris = resources
		a = u.applyLegacy(ctx, want)
		if len(tasks) > 0 {
			a.URIs = merge2(a.URIs, tasks)
		}
	}
	u.established = true
	// In place: on a live child and, for a modern one, in an open listen
	// (one that ended waits relistenDelay before it is opened again, and
	// applyModern answers with the last ack meanwhile).
	u.resolveLive(v, a, !exited(u.child) && (!u.child.Modern() || u.listen != nil))
	u.promise(a)
	if restarted && !exited(u.child) {
		// (A child that died while its subscriptions were re-sent gets no
		// restarted event after its exited one; its successor's re-send
		// announces the restart.)
		u.restarted(want)
	}
}

// errInterestChanged ends an acquire whose interest changed meanwhile.
var errInterestChanged = errors.New("the subscriptions changed")

// acquireFor is acquire for the interest of version v, given up when the
// interest changes meanwhile.
func (u *upstream) acquireFor(ctx context.Context, v uint64, scope any) (Child, error) {
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	u.mu.Lock()
	u.acquiring = func() { cancel(errInterestChanged) }
	if u.version != v {
		u.acquiring()
	}
	u.mu.Unlock()
	c, err := u.acquire(actx, scope)
	u.mu.Lock()
	u.acquiring = nil
	u.mu.Unlock()
	if err != nil && ctx.Err() == nil && errors.Is(context.Cause(actx), errInterestChanged) {
		return nil, errInterestChanged
	}
	return c, err
}

// acquire returns the live child of the upstream's server or instance
// (started for scope).
func (u *upstream) acquire(ctx context.Context, scope any) (Child, error) {
	if u.inst == "" {
		return u.m.opts.Source.Acquire(ctx, u.name)
	}
	is, ok := u.m.opts.Source.(InstanceSource)
	if !ok {
		return nil, errors.New("server " + quote(u.name) + " runs no instances")
	}
	return is.AcquireInstance(ctx, u.name, u.inst, scope)
}

// release drops every upstream subscription (no stream wants any).
func (u *upstream) release(ctx context.Context) {
	u.established = false
	if u.child == nil {
		return
	}
	u.closeListens(ctx, "no more subscribers")
	if u.probe != nil {
		return // the stalled child's unsubscribes go once it answers (answered)
	}
	b := u.newBatch(ctx)
	if kept := b.unsubscribe(u.subscribedURIs); len(kept) > 0 {
		// The child is live but slow: it keeps them until it answers.
		u.subscribedURIs = kept
		u.startProbe(ctx, "resources/unsubscribe", kept[0])
		return
	}
	u.promise(ServerAck{})
	// Without demand the child may now stop (idle): forget it.
	u.child, u.subscribedURIs = nil, nil
	u.refused, u.refusedFor = nil, nil
	u.refusing.Store(false)
}

// capabilities is the part of ServerCapabilities subscriptions depend on.
type capabilities struct {
	Tools *struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
	Prompts *struct {
		ListChanged bool `json:"listChanged"`
	} `json:"prompts"`
	Resources *struct {
		ListChanged bool `json:"listChanged"`
		Subscribe   bool `json:"subscribe"`
	} `json:"resources"`
	Logging json.RawMessage `json:"logging"`
}

// listenFilter is the params.notifications object of a listen.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	TaskIDs               []string `json:"taskIds,omitempty"` // tasks.go
}

// exited reports whether c's process has already gone.
func exited(c Child) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// restarted tells the streams that the child was replaced: a restarted
// event, then synthetic change events for what they watch (the lists and
// resources may have changed while the child was down).
func (u *upstream) restarted(want wants) {
	now := time.Now()
	pid := 0
	if u.child != nil {
		pid = u.child.Pid()
	}
	u.log.Info("subscriptions re-sent after restart", zap.Int("pid", pid), zap.Int("uris", len(want.uris)))
	u.m.publish(Event{Kind: KindRestarted, Server: u.name, Pid: pid, Time: now, inst: u.inst})
	for _, k := range []Kind{KindToolsListChanged, KindPromptsListChanged, KindResourcesListChanged} {
		u.m.publish(Event{Kind: k, Server: u.name, Synthetic: true, Time: now, inst: u.inst})
	}
	resources, _ := splitTasks(want.uris)
	for _, uri := range resources {
		u.m.publish(Event{Kind: KindResourceUpdated, Server: u.name, URI: uri, Synthetic: true, Time: now, inst: u.inst})
	}
}
