package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/procs"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/transport"
	"github.com/mcpd-dev/mcpd/internal/version"
)

// Options configure a Supervisor. Zero values mean the documented defaults.
type Options struct {
	Specs  []Spec
	Logger *zap.Logger
	// Keeper tracks every process of every child (cgroups, subreaper,
	// records for the next mcpd); nil: process groups only.
	Keeper *procs.Keeper
	// ClientInfo is mcpd's Implementation object sent to children. If nil,
	// {"name":"mcpd","version":<version.Version>}.
	ClientInfo json.RawMessage
	// Capabilities is what mcpd declares to a legacy child at initialize;
	// nil means {}.
	Capabilities json.RawMessage
	// CrashLoopMax unexpected exits within CrashLoopWindow, or as many
	// failed starts in a row, enter crashloop
	// (defaults 5 and 60s); CrashLoopCooldown is how long it lasts (60s).
	CrashLoopMax      int
	CrashLoopWindow   time.Duration
	CrashLoopCooldown time.Duration
	// BackoffMin and BackoffMax bound the restart backoff (250ms, 30s).
	BackoffMin time.Duration
	BackoffMax time.Duration
	// MaxRequestTimeout caps per-call timeout overrides (10m).
	MaxRequestTimeout time.Duration
	// HandshakeTimeout bounds spawn + negotiation of one start (30s).
	HandshakeTimeout time.Duration
	// OnEvent, if set, receives every lifecycle transition of every server.
	// It is called without any lock held, from the supervisor's goroutines,
	// and must not block (queue the event and return).
	OnEvent func(Event)
	// OnNotification, if set, receives the notifications of every server's
	// session that are not tied to a request (list changes, resource
	// updates, untagged log messages). It is called on the session's reader
	// goroutine and must not block.
	OnNotification func(server string, n session.Notification)
	// OnRequest, if set, answers requests a child sends to mcpd (roots/list,
	// sampling/createMessage, elicitation/create); nil answers -32601.
	OnRequest func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError)
	// OnHostNotification, if set, receives a child's notification that
	// belongs to the app that answered one of its requests
	// (notifications/elicitation/complete), with a ctx that names the
	// instance as OnRequest's does. It is called on the session's reader
	// goroutine and must not block; nil drops them.
	OnHostNotification func(ctx context.Context, server, method string, params json.RawMessage)
	// SubscriptionQueueEvents and SubscriptionQueueBytes bound each app
	// subscription stream's queue (defaults 1024 events, 8 MiB).
	SubscriptionQueueEvents int
	SubscriptionQueueBytes  int
	// DrainTimeout bounds how long a server removed or restarted by Apply
	// waits for its calls in flight (reload.go). If zero, 30s.
	DrainTimeout time.Duration
	// Secrets resolves the ${secret:NAME} references of a server's args,
	// env and headers each time it starts (secrets.go). Nil: a server with
	// such a reference fails to start, saying so.
	Secrets SecretSource
	// NewAuthorizer, if set, returns the Authorizer of a remote server
	// (OAuth), or nil for none; it is called at every connection.
	NewAuthorizer func(server string, r *config.Remote) remote.Authorizer
	// NoCacheListens turns off mcpd's own upstream listen (ownlisten.go):
	// modern children then promise list changes to the cache only while
	// an app subscribes to them.
	NoCacheListens bool
	// Pins, if set, records and checks the servers' tool definitions
	// (pin.go); nil: no pinning.
	Pins *pin.Book
	// Upstream, if set, is told of every request sent to a child (a
	// tracer's client span): it returns the request to send (it may add
	// trace context to the params' _meta, in a copy) and a func told the
	// outcome. It runs on the caller's goroutine and must not block.
	Upstream func(ctx context.Context, server string, req *session.Request) (*session.Request, func(*session.Response, error))
	// InstanceSweep is how often the instances of shared servers are
	// checked for apps and roots that went away (instances.go). If zero,
	// DefaultInstanceSweep.
	InstanceSweep time.Duration
	// Load, if set, is told of every call and list while it runs (the
	// daemon's gomaxprocs.Governor counts them); nil: nobody.
	Load CallLoad
}

// CallLoad is told when a call or list of an app starts and ends (once
// per request: Call, CallCached and ListCached count, the fetches they make
// inside do not), and how many apps
// an event is fanned out to (when more than one); all run on the caller's
// goroutine and must not block.
type CallLoad interface {
	Enter()
	Exit()
	FanOut(streams int)
}

// fanOut tells s.opts.Load of an event queued for streams apps.
func (s *Supervisor) fanOut(streams int) {
	if l := s.opts.Load; l != nil {
		l.FanOut(streams)
	}
}

// CallOptions are per-call settings.
type CallOptions struct {
	// Timeout overrides the server's RequestTimeout (capped); zero uses it.
	Timeout time.Duration
}

// Supervisor runs all servers. Its methods are safe for concurrent use.
// Calls made before Run wait (within their deadline) until Run starts the
// servers; calls after Run's context ended fail with ErrUnavailable.
type Supervisor struct {
	opts Options
	log  *zap.Logger
	bo   backoff

	// now and after are the clock, injectable by tests. after returns a
	// channel that receives once d has passed and a func that stops it.
	now   func() time.Time
	after func(d time.Duration) (<-chan time.Time, func() bool)

	// quit is closed when Run's context ends.
	quit     chan struct{}
	quitOnce sync.Once
	// loops tracks the servers' loop goroutines; Run waits for them.
	loops sync.WaitGroup

	mu      sync.RWMutex // guards following; calls only read-lock it (lookup)
	servers map[string]*server
	running bool
	// loopsClosed: Run is stopping; no loop starts any more (dormant.go).
	loopsClosed bool
	// instances are the shared servers' instances: server name, then
	// instance key (instances.go).
	instances map[string]map[string]*server
	// sharedCount counts the shared servers (Shared).
	sharedCount atomic.Int32

	// subs is the subscription manager (subscriptions.go).
	subs *subscriptions.Manager

	// applyMu serializes Apply (reload.go).
	applyMu sync.Mutex
}

// New returns a supervisor for opts.Specs; nothing starts before Run. Specs
// with an empty or duplicate name are ignored (config validation rejects them
// before this point).
func New(opts Options) *Supervisor {
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	if opts.ClientInfo == nil {
		ci, _ := json.Marshal(map[string]string{"name": "mcpd", "version": version.Version})
		opts.ClientInfo = ci
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if opts.CrashLoopMax <= 0 {
		opts.CrashLoopMax = DefaultCrashLoopMax
	}
	def(&opts.CrashLoopWindow, DefaultCrashLoopWindow)
	def(&opts.CrashLoopCooldown, DefaultCrashLoopCooldown)
	def(&opts.BackoffMin, DefaultBackoffMin)
	def(&opts.BackoffMax, DefaultBackoffMax)
	def(&opts.MaxRequestTimeout, DefaultMaxRequestTimeout)
	def(&opts.HandshakeTimeout, DefaultHandshakeTimeout)
	opts.BackoffMax = max(opts.BackoffMax, opts.BackoffMin)

	s := &Supervisor{
		opts:    opts,
		log:     opts.Logger.Named("supervisor"),
		bo:      backoff{min: opts.BackoffMin, max: opts.BackoffMax, rand: rand.Float64},
		now:     time.Now,
		after:   realAfter,
		quit:    make(chan struct{}),
		servers: make(map[string]*server, len(opts.Specs)),

		instances: make(map[string]map[string]*server),
	}
	for _, spec := range opts.Specs {
		if spec.Name == "" {
			continue
		}
		if _, dup := s.servers[spec.Name]; dup {
			s.log.Warn("duplicate server name ignored", zap.String("server", spec.Name))
			continue
		}
		s.servers[spec.Name] = newServer(s, spec)
	}
	s.recountShared()
	s.subs = newSubscriptions(s)
	return s
}

func realAfter(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// Run starts autostart servers and supervises until ctx ends; then it stops
// every child in parallel and returns once all are reaped. It returns nil
// after a normal shutdown, ErrAlreadyRunning if called twice.
func (s *Supervisor) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return ErrAlreadyRunning
	}
	s.running = true
	for _, sv := range s.servers {
		s.startLoopIfNeededLocked(sv) // dormant.go: a lazy server's waits for its first command
	}
	for _, set := range s.instances {
		for _, sv := range set {
			s.startLoopLocked(sv)
		}
	}
	configured := len(s.servers) // Apply may change it once s.mu is released
	s.mu.Unlock()
	s.loops.Add(1)
	go func() {
		defer s.loops.Done()
		s.sweepInstances() // instances.go
	}()
	s.log.Info("supervisor started", zap.Int("servers", configured))

	<-ctx.Done()
	s.log.Debug("stopping supervisor") // mcpd says "mcpd stopping"
	s.quitOnce.Do(func() { close(s.quit) })
	s.closeLoops() // dormant.go
	s.subs.Close() // ends the app streams; its acquires fail once quit is closed
	// Every loop stops its child (transport.Stop: at most about
	// 2×ShutdownGrace each, all in parallel) and returns once it is reaped.
	s.loops.Wait()
	s.waitCaches()
	s.log.Debug("supervisor stopped")
	return nil
}

func (s *Supervisor) shuttingDown() bool {
	select {
	case <-s.quit:
		return true
	default:
		return false
	}
}

func (s *Supervisor) lookup(name string) (*server, error) {
	s.mu.RLock()
	sv := s.servers[name]
	s.mu.RUnlock()
	if sv == nil {
		return nil, unknownServer(name)
	}
	return sv, nil
}

// Call forwards req to the named server, starting it if needed, under the
// server's request deadline (or opts.Timeout). An MCP error from the child
// is returned in Response.Error, not as err.
func (s *Supervisor) Call(ctx context.Context, server string, req *session.Request, opts CallOptions) (*session.Response, error) {
	if l := s.opts.Load; l != nil {
		l.Enter()
		defer l.Exit()
	}
	return s.namedCall(ctx, server, req, opts)
}

// namedCall is Call, not counted as load (a part of another call).
func (s *Supervisor) namedCall(ctx context.Context, server string, req *session.Request, opts CallOptions) (*session.Response, error) {
	sv, err := s.target(ctx, server)
	if err != nil {
		return nil, err
	}
	return s.callServer(ctx, sv, req, opts)
}

// callServer is Call on a server already looked up.
func (s *Supervisor) callServer(ctx context.Context, sv *server, req *session.Request, opts CallOptions) (*session.Response, error) {
	if err := validateRequest(req); err != nil {
		return nil, fmt.Errorf("call %q: %w", sv.spec.Name, err)
	}
	timeout, bound := sv.requestTimeout(), BoundRequestTimeout
	if opts.Timeout > 0 {
		timeout, bound = min(opts.Timeout, s.opts.MaxRequestTimeout), BoundCallTimeout
	}
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	sv.total.Add(1)
	sv.inFlight.Add(1)
	defer sv.callDone() // reload.go: wakes a drain when it reaches zero
	var upstreamDone func(*session.Response, error)
	if up := s.opts.Upstream; up != nil {
		req, upstreamDone = up(ctx, sv.spec.Name, req)
	}
	resp, err := sv.call(ctx, req)
	if upstreamDone != nil {
		upstreamDone(resp, err)
	}
	if err != nil || resp.Error != nil {
		sv.failed.Add(1)
	}
	if err != nil && parent.Err() == nil && ctx.Err() != nil {
		// mcpd's own deadline for the call ended it, not the app's.
		err = timedOut(err, sv.spec.Name, timeout, bound)
	}
	return resp, err
}

func validateRequest(req *session.Request) error {
	if req == nil || req.Method == "" {
		return fmt.Errorf("%w: method required", ErrInvalid)
	}
	if req.Validated {
		return nil // checked where it entered the daemon
	}
	p := bytes.TrimSpace(req.Params) // no copy: this runs on every call
	if len(p) == 0 || string(p) == "null" {
		return nil
	}
	if p[0] != '{' || !jsonrpc.Valid(p) {
		return fmt.Errorf("%w: params of %s must be a JSON object", ErrInvalid, req.Method)
	}
	return nil
}

// Start starts a server (clearing an explicit stop or crash loop) and waits
// until it is ready or failed.
func (s *Supervisor) Start(ctx context.Context, name string) (Status, error) {
	return s.command(ctx, name, cmdStart)
}

// Stop stops a server; it is not restarted until started again. Calls in
// flight fail at once with an ErrUnavailable error saying the server was
// stopped. Stop returns once the child has been reaped.
func (s *Supervisor) Stop(ctx context.Context, name string) (Status, error) {
	return s.command(ctx, name, cmdStop)
}

// Restart stops the server if it runs and starts it again. It also clears an
// explicit stop, a crash loop or a failed state.
func (s *Supervisor) Restart(ctx context.Context, name string) (Status, error) {
	return s.command(ctx, name, cmdRestart)
}

func (s *Supervisor) command(ctx context.Context, name string, kind cmdKind) (Status, error) {
	sv, err := s.lookup(name)
	if err != nil {
		return Status{}, err
	}
	if sv.sharedBase() {
		err = s.commandInstances(ctx, sv, kind) // instances.go
		return s.sharedStatus(sv), err
	}
	err = sv.send(ctx, kind)
	return sv.status(), err
}

// Status returns every server's status, sorted by name.
func (s *Supervisor) Status() []Status {
	s.mu.Lock()
	servers := make([]*server, 0, len(s.servers))
	for _, sv := range s.servers {
		servers = append(servers, sv)
	}
	s.mu.Unlock()
	out := make([]Status, 0, len(servers))
	for _, sv := range servers {
		out = append(out, s.sharedStatus(sv))
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ServerStatus returns one server's status.
func (s *Supervisor) ServerStatus(name string) (Status, error) {
	sv, err := s.lookup(name)
	if err != nil {
		return Status{}, err
	}
	return s.sharedStatus(sv), nil
}

// Logs returns up to n recent stderr lines of a server, oldest first, across
// restarts.
func (s *Supervisor) Logs(name string, n int) ([]transport.Line, error) {
	sv, err := s.lookup(name)
	if err != nil {
		return nil, err
	}
	if sv.sharedBase() {
		return s.instanceLogs(sv, n), nil // instances.go
	}
	return sv.ring.Last(n), nil
}

// Names returns the configured server names, sorted, disabled ones included.
func (s *Supervisor) Names() []string {
	s.mu.Lock()
	names := make([]string, 0, len(s.servers))
	for name := range s.servers {
		names = append(names, name)
	}
	s.mu.Unlock()
	slices.Sort(names)
	return names
}

// emit calls OnEvent; it must be called without locks held.
func (s *Supervisor) emit(ev Event) {
	s.cacheOnEvent(ev)
	s.subsOnEvent(ev)
	if s.opts.OnEvent != nil {
		s.opts.OnEvent(ev)
	}
}

// childEnv returns os.Environ() with spec's Env merged over it (transport
// removes NOTIFY_SOCKET and LISTEN_*).
func childEnv(extra map[string]string) []string {
	base := os.Environ()
	if len(extra) == 0 {
		return base
	}
	out := make([]string, 0, len(base)+len(extra))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, over := extra[k]; over {
			continue
		}
		out = append(out, kv)
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, k+"="+extra[k])
	}
	return out
}
