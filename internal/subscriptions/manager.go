package subscriptions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultAckTimeout bounds how long Subscribe and Update wait for the
// servers to acknowledge (start the child, subscribe upstream).
const DefaultAckTimeout = 30 * time.Second

// ErrUnknownStream: no open stream has that subscription id.
var ErrUnknownStream = errors.New("subscriptions: unknown subscription")

// ErrInvalid: the watch request is malformed.
var ErrInvalid = errors.New("subscriptions: invalid request")

// Source is the set of supervised servers as the manager needs it; the
// supervisor implements it.
type Source interface {
	// Acquire returns the live child of server, starting it if needed. A
	// pending Acquire counts as demand: it keeps the server restarted after
	// an unexpected exit. It fails when the server cannot run (crash loop,
	// failed, stopped by the operator, unknown).
	Acquire(ctx context.Context, server string) (Child, error)
	// Names lists the configured servers.
	Names() []string
}

// Child is one running, handshaken child process.
type Child interface {
	Pid() int
	// Modern reports whether the child speaks the modern era.
	Modern() bool
	// Capabilities is the child's ServerCapabilities object.
	Capabilities() json.RawMessage
	// Call sends one request (resources/subscribe, resources/unsubscribe);
	// a JSON-RPC error from the child is returned as the error, and an
	// error wrapping ErrChildGone says the child exited or is being
	// stopped.
	Call(ctx context.Context, method string, params json.RawMessage) error
	// Listen opens a subscriptions/listen with filter and returns once the
	// child acknowledged it; onNotify receives the notifications tagged
	// with it (on the child's reader goroutine; it must not block).
	Listen(ctx context.Context, filter json.RawMessage, onNotify func(method string, params json.RawMessage)) (Listener, error)
	// Done is closed when the child has exited.
	Done() <-chan struct{}
}

// Listener is one open subscriptions/listen.
type Listener interface {
	// Ack is the params.notifications object the child acknowledged.
	Ack() json.RawMessage
	// Done is closed when the listen ended (the server closed it, Cancel,
	// or the child exited).
	Done() <-chan struct{}
	// Cancel sends notifications/cancelled for the listen and ends it
	// (Done). What the server sent before it read the cancel still reaches
	// onNotify until the server closed the listen or Forget.
	Cancel(reason string)
	// Closed is closed once the server closed the listen (its closing
	// result, also after Cancel) or the child exited.
	Closed() <-chan struct{}
	// Forget stops waiting for the closing message of a cancelled listen.
	Forget()
}

// StateEvent is a lifecycle transition reported by the supervisor.
type StateEvent struct {
	Server string
	// State is started, ready, exited, restarting, crashloop, stopped or failed.
	State string
	Pid   int
	Exit  string
	Error string
	Time  time.Time
	// Instance is the key of the instance of Server whose child it is ("":
	// the server's own child).
	Instance string
}

// Options configure a Manager.
type Options struct {
	Source Source
	// Logger may be nil.
	Logger *zap.Logger
	// QueueEvents and QueueBytes bound each stream's queue (1024, 8 MiB).
	QueueEvents int
	QueueBytes  int
	// AckTimeout bounds Subscribe's wait for acknowledgements (30s).
	AckTimeout time.Duration
	// CallTimeout bounds one resources/(un)subscribe to a child, or the
	// wait for a listen's acknowledgement (30s).
	CallTimeout time.Duration
	// Observe, if set, is called with every notification a child delivered
	// on a subscriptions/listen (also the copies that the de-duplication
	// of a listen switch holds back or drops), before any app hears of it,
	// so that caches can be
	// invalidated first. (Notifications passed to OnNotification have
	// already been observed by the caller.) It runs on the child's reader
	// goroutine and must not block.
	Observe func(t Target, method string, params json.RawMessage)
	// OnPromises, if set, is told what the upstream subscriptions on the
	// process pid of server guarantee to deliver, whenever that changes
	// (an acknowledged listen, legacy resources/subscribe, a release).
	OnPromises func(t Target, pid int, a ServerAck)
	// OnFanOut, if set, is told how many streams an event was queued for,
	// when more than one, on the publishing goroutine; it must not block.
	OnFanOut func(streams int)
	// OnDemand, if set, is told whether the open streams want anything
	// from server's child (demand.go) whenever that is computed; it must
	// not block.
	OnDemand func(t Target, demand bool)
	// CacheListens makes mcpd its own subscriber (own.go): every ready
	// modern child keeps the list kinds it advertises as listChanged in its
	// upstream listen, so the acknowledged listen becomes cache promises.
	// It is not demand and needs a Source that is a ReadySource.
	CacheListens bool
}

// Manager holds every app stream and one upstream aggregator per server.
// Its methods are safe for concurrent use.
type Manager struct {
	opts   Options
	log    *zap.Logger
	nextID atomic.Uint64
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the upstream loops

	mu        sync.RWMutex // guards the fields below
	streams   map[uint64]*Stream
	upstreams map[Target]*upstream
	closed    bool
	retired   Totals // counters of the closed streams (totals.go)

	interest interest // the streams' union, counted (interest.go)
}

// New returns a manager; its upstream goroutines run until Close.
func New(opts Options) *Manager {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = DefaultAckTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		opts:      opts,
		log:       opts.Logger.Named("subscriptions"),
		ctx:       ctx,
		cancel:    cancel,
		streams:   map[uint64]*Stream{},
		upstreams: map[Target]*upstream{},
	}
}

// Close ends every stream with an error event and stops the upstream
// goroutines. Idempotent.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	streams := make([]*Stream, 0, len(m.streams))
	for _, st := range m.streams {
		streams = append(streams, st)
	}
	m.mu.Unlock()
	for _, st := range streams {
		st.endWith(&Event{Kind: KindError, Error: "mcpd is shutting down", ShuttingDown: true, Time: time.Now()})
	}
	m.cancel()
	m.wg.Wait()
}

// upstream returns the aggregator of t, creating it (and its goroutine)
// on first use; nil after Close.
func (m *Manager) upstream(t Target) *upstream {
	m.mu.RLock()
	u := m.upstreams[t]
	m.mu.RUnlock()
	if u != nil {
		return u
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	if u = m.upstreams[t]; u == nil {
		u = newUpstream(m, t)
		ctx, stop := context.WithCancel(m.ctx)
		u.stop = stop
		m.upstreams[t] = u
		m.wg.Add(1)
		go func() {
			defer m.wg.Done()
			defer stop()
			u.run(ctx)
		}()
	}
	return u
}

func (m *Manager) existing(t Target) *upstream {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.upstreams[t]
}

// Subscribe opens a stream for app and waits (bounded by ctx and
// AckTimeout) until each watched server has set up what the stream needs
// upstream, starting lazily started servers. It returns the stream and one
// acknowledgement per server. Events may be queued before it returns; they
// are delivered after the acknowledgement.
func (m *Manager) Subscribe(ctx context.Context, app AppInfo, w Watch) (*Stream, []ServerAck, error) {
	names := slices.Clone(w.Servers)
	all := len(names) == 0
	if all {
		if len(w.URIs) > 0 {
			return nil, nil, fmt.Errorf("%w: resource URIs need at least one server name", ErrInvalid)
		}
		names = m.opts.Source.Names()
	}
	slices.Sort(names)
	names = slices.Compact(names)
	st := &Stream{
		id:      m.nextID.Add(1),
		app:     app,
		m:       m,
		q:       newQueue(m.opts.QueueEvents, m.opts.QueueBytes),
		created: time.Now(),
		watch:   w,
		uris:    map[string]map[string]bool{},
	}
	st.q.onLag = func() { m.lagged(st) }
	st.watch.URIs = nil
	if !all {
		st.servers = map[string]bool{}
		for _, n := range names {
			st.servers[n] = true
			if len(w.URIs) > 0 {
				st.uris[n] = map[string]bool{}
				for _, u := range w.URIs {
					if u != "" && st.allows(n, u) {
						st.uris[n][u] = true
					}
				}
			}
		}
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, nil, errors.New("subscribe: mcpd is shutting down")
	}
	m.streams[st.id] = st
	m.mu.Unlock()
	m.recount(st)
	m.log.Debug("stream opened", zap.Uint64("subscription_id", st.id), zap.String("app", app.Name), zap.Strings("servers", names))
	return st, m.acks(ctx, st, names, false), nil
}

// acks bumps the upstream of every server in names and waits for their
// acknowledgements, intersected with what st asked for. Servers st wants
// nothing from are skipped unless all is set (an update may just have
// withdrawn st's interest: wait until that is applied too).
func (m *Manager) acks(ctx context.Context, st *Stream, names []string, all bool) []ServerAck {
	ctx, cancel := context.WithTimeout(ctx, m.opts.AckTimeout)
	defer cancel()
	type pending struct {
		u *upstream
		v uint64
	}
	waits := make([]pending, len(names))
	out := make([]ServerAck, len(names))
	covered := make([]bool, len(names))
	for i, n := range names {
		key, err := m.route(st, n)
		if err != nil {
			// The stream reaches no instance of this shared server.
			out[i] = ServerAck{Server: n, State: st.watch.State, Error: err.Error()}
			continue
		}
		want := st.wantsFrom(n)
		if !all && !want.any() {
			continue
		}
		// A new stream that wants only what is subscribed already.
		if u := m.existing(Target{n, key}); u != nil && !all {
			if a, ok := u.covers(want); ok {
				out[i], covered[i] = intersect(a, want, st.watch.State), true
				continue
			}
		}
		waits[i] = m.bump(Target{n, key})
	}
	var wg sync.WaitGroup
	for i, n := range names {
		want := st.wantsFrom(n)
		if covered[i] {
			continue
		}
		if waits[i].u == nil {
			if out[i].Error == "" {
				out[i] = ServerAck{Server: n, State: st.watch.State}
			}
			continue
		}
		wg.Go(func() {
			a := waits[i].u.wait(ctx, waits[i].v)
			out[i] = intersect(a, want, st.watch.State)
		})
	}
	wg.Wait()
	return out
}

// bump records a change of interest on the upstream of t and returns it
// with the version to wait for (no upstream after Close). An instance's
// upstream that went idle meanwhile is replaced (dropIdle).
func (m *Manager) bump(t Target) (p struct {
	u *upstream
	v uint64
}) {
	for {
		u := m.upstream(t)
		if u == nil {
			return p
		}
		if v, ok := u.bump(); ok {
			p.u, p.v = u, v
			return p
		}
	}
}

func intersect(a ServerAck, w wants, state bool) ServerAck {
	out := ServerAck{Server: a.Server, Era: a.Era, Error: a.Error, State: state,
		ToolsListChanged:     a.ToolsListChanged && w.tools,
		PromptsListChanged:   a.PromptsListChanged && w.prompts,
		ResourcesListChanged: a.ResourcesListChanged && w.resources,
		Logs:                 a.Logs && w.logs,
	}
	for _, u := range w.uris {
		if _, found := slices.BinarySearch(a.URIs, u); found {
			out.URIs = append(out.URIs, u)
		}
	}
	return out
}

// Update adds and removes resource URIs of an open stream (on every server
// it names) without reopening it, and returns the new acknowledgements.
func (m *Manager) Update(ctx context.Context, id uint64, add, remove []string) ([]ServerAck, error) {
	m.mu.RLock()
	st := m.streams[id]
	m.mu.RUnlock()
	if st == nil {
		return nil, fmt.Errorf("%w %d", ErrUnknownStream, id)
	}
	st.mu.Lock()
	if st.servers == nil {
		st.mu.Unlock()
		return nil, fmt.Errorf("%w: subscription %d watches every server; resource URIs need named servers", ErrInvalid, id)
	}
	names := make([]string, 0, len(st.servers))
	for n := range st.servers {
		names = append(names, n)
		set := st.uris[n]
		if set == nil {
			set = map[string]bool{}
			st.uris[n] = set
		}
		for _, u := range remove {
			delete(set, u)
		}
		for _, u := range add {
			if u != "" && st.allows(n, u) {
				set[u] = true
			}
		}
		st.changedLocked(n)
	}
	st.mu.Unlock()
	m.recount(st)
	slices.Sort(names)
	return m.acks(ctx, st, names, true), nil
}

// remove unregisters a closed stream and releases its upstream interest.
func (m *Manager) remove(st *Stream) {
	// A reload may change the stream's servers meanwhile (ServerRemoved):
	// end reads them under the stream's lock.
	l := st.end(true)
	m.mu.Lock()
	if m.streams[st.id] == st {
		m.retireLocked(st)
	}
	delete(m.streams, st.id)
	m.mu.Unlock()
	m.release(st, l) // leave.go
	m.log.Debug("stream closed", zap.Uint64("subscription_id", st.id), zap.String("app", st.app.Name))
}

// lagged releases the upstream interest of a stream whose queue overflowed:
// the stream has ended, though it stays listed (as lagged) until its app has
// read the lagged event or gone away.
func (m *Manager) lagged(st *Stream) {
	m.release(st, st.end(false))
	m.log.Debug("stream lagged", zap.Uint64("subscription_id", st.id), zap.String("app", st.app.Name))
}

// union is what every open stream wants from t, and the scope of one of
// those streams (an instance is acquired for it).
func (m *Manager) union(t Target) (wants, any) {
	if !m.routed() {
		// Every stream reaches the server's one child: the counts hold
		// the union (interest.go).
		var u wants
		if t.Instance == "" {
			u = m.countedUnion(t.Server)
		}
		m.reportDemand(t, u.any())
		return u, nil
	}
	var u wants
	var scope any
	var lists [][]string
	for _, st := range m.openStreams() {
		w := m.wantsOf(st, t)
		if w.any() && scope == nil {
			scope = st.app.Scope
		}
		u.tools = u.tools || w.tools
		u.prompts = u.prompts || w.prompts
		u.resources = u.resources || w.resources
		u.logs = u.logs || w.logs
		if len(w.uris) > 0 {
			lists = append(lists, w.uris)
		}
	}
	u.uris = mergeSorted(lists)
	m.reportDemand(t, u.any()) // demand.go
	return u, scope
}

// mergeSorted returns the sorted union of sorted lists, each without
// duplicates, merging them in pairs: O(n log k) for n strings in k lists,
// with no map and no sort. It never changes the lists.
func mergeSorted(lists [][]string) []string {
	switch len(lists) {
	case 0:
		return nil
	case 1:
		return slices.Clone(lists[0])
	}
	for len(lists) > 1 {
		next := lists[:0:0]
		for i := 0; i < len(lists); i += 2 {
			if i+1 == len(lists) {
				next = append(next, lists[i])
				break
			}
			next = append(next, merge2(lists[i], lists[i+1]))
		}
		lists = next
	}
	return slices.Clip(lists[0]) // an append by a caller copies
}

// merge2 merges two sorted lists into a new one, each string once where
// both hold it.
func merge2(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// StreamStatus is one open stream, for status.
type StreamStatus struct {
	ID      uint64
	App     AppInfo
	Servers []string // empty: every server
	URIs    int
	Created time.Time
	Queue   QueueStats
}

// Streams returns every open stream, oldest first.
func (m *Manager) Streams() []StreamStatus {
	m.mu.RLock()
	streams := make([]*Stream, 0, len(m.streams))
	for _, st := range m.streams {
		streams = append(streams, st)
	}
	m.mu.RUnlock()
	slices.SortFunc(streams, func(a, b *Stream) int { return int(a.id) - int(b.id) })
	out := make([]StreamStatus, 0, len(streams))
	for _, st := range streams {
		s := StreamStatus{ID: st.id, App: st.app, Created: st.created, Queue: st.q.snapshot()}
		st.mu.Lock()
		for n := range st.servers {
			s.Servers = append(s.Servers, n)
		}
		for _, set := range st.uris {
			s.URIs += len(set)
		}
		st.mu.Unlock()
		slices.Sort(s.Servers)
		out = append(out, s)
	}
	return out
}
