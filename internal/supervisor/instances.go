package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/transport"
)

// This file runs the instances of shared servers (Spec.Share):
//
//   - a server with share "client" runs one child per app identity, one
//     with share "root" one child per workspace root, started with the root
//     as its working directory and answering its roots/list with that root
//     alone. The configured server itself never runs a child; its instances
//     are servers of their own (state, cache, restart accounting, stderr),
//     created on the first call that needs one from the server's current
//     spec, and keyed by the Scope the call carries (WithScope);
//   - an instance is owned by the connections that called it for its key;
//     the sweep (every Options.InstanceSweep) finds the instances whose
//     owners are all gone and removes each once that has lasted its
//     idleTimeout (at once without one): its child is stopped and the next
//     call starts a new instance. Its own idle timeout also stops its child
//     meanwhile, as for any server;
//   - Spec.MaxInstances caps them: the call that would start one more fails
//     with ErrInstanceLimit, naming the cap and who holds the instances;
//   - a reload that changes only the server's settings (requestTimeout,
//     idleTimeout, cache, maxInstances...) hands them to its instances,
//     which keep their children; one that changes its identity (command,
//     share...), disables or removes it removes its instances; Stop
//     removes them and refuses new ones until Start, Restart restarts
//     each;
//   - an app's subscriptions to a shared server reach its instance (the
//     one its calls reach, started on demand; subscriptions.Target): its
//     child's notifications reach the instance's own cache and the
//     streams of the apps it serves alone. An instance with open
//     subscriptions is demand: the sweep leaves it, and its restarts
//     re-send them.

// DefaultInstanceSweep is how often instances are checked for owners that
// went away, when Options.InstanceSweep is zero.
const DefaultInstanceSweep = time.Second

// Share values of Spec.Share (config.ShareGlobal and the others).
const (
	ShareGlobal = "global"
	ShareClient = "client"
	ShareRoot   = "root"
)

// ErrInstanceLimit is wrapped by the error of a call that needs a new
// instance of a server that already runs Spec.MaxInstances of them.
var ErrInstanceLimit = errors.New("supervisor: instance limit reached")

// Scope says whom a call is for; it picks the instance of a shared server.
type Scope struct {
	// App identifies the app (the key of a "client" instance): the same
	// string for every connection of one app, such as its client name and
	// process id.
	App string
	// Root is the workspace root the call is made in (the key of a "root"
	// instance): an absolute directory.
	Root string
	// HostRoot, when set, is asked for the root of a call that names none
	// (Root empty) to a "root" server: the root the app's host declared,
	// "" for none.
	HostRoot func(ctx context.Context) string
	// Owner identifies the connection the call came on (0: none); Alive
	// reports whether it is still open. An instance whose owners are all
	// closed goes away; a nil Alive owns its instance until the server's
	// config changes.
	Owner uint64
	Alive func() bool
}

type scopeKey struct{}

// WithScope returns ctx carrying sc for Call, CallCached and ListCached.
func WithScope(ctx context.Context, sc Scope) context.Context {
	return context.WithValue(ctx, scopeKey{}, sc)
}

// ScopeFrom returns the Scope of ctx, if any.
func ScopeFrom(ctx context.Context) (Scope, bool) {
	sc, ok := ctx.Value(scopeKey{}).(Scope)
	return sc, ok
}

// instance is what makes a server an instance of a shared one.
type instance struct {
	key  string // App or Root
	root string // the workspace root of a "root" instance

	mu        sync.Mutex // guards following
	owners    map[uint64]func() bool
	goneSince time.Time // when the last owner was seen gone; zero while one lives
}

// own records sc's connection as an owner.
func (in *instance) own(sc Scope) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if _, ok := in.owners[sc.Owner]; !ok {
		in.owners[sc.Owner] = sc.Alive
	}
	in.goneSince = time.Time{}
}

// goneFor reports how long every owner has been gone at now (0 while one
// lives), forgetting the owners that went.
func (in *instance) goneFor(now time.Time) (time.Duration, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	for id, alive := range in.owners {
		if alive == nil || alive() {
			in.goneSince = time.Time{}
			return 0, false
		}
		delete(in.owners, id)
	}
	if in.goneSince.IsZero() {
		in.goneSince = now
	}
	return now.Sub(in.goneSince), true
}

func isShared(share string) bool { return share == ShareClient || share == ShareRoot }

func normShare(share string) string {
	if share == "" {
		return ShareGlobal
	}
	return share
}

// sharedBase reports whether sv is a shared server, whose instances run
// its children. Safe from any goroutine.
func (sv *server) sharedBase() bool { return sv.inst == nil && sv.shared.Load() }

// instanceKey is the key of an instance, "" for any other server.
func (sv *server) instanceKey() string {
	if sv.inst == nil {
		return ""
	}
	return sv.inst.key
}

// childLog is the logger of the server's transport and session: it names
// the instance of an instance.
func (sv *server) childLog() *zap.Logger {
	if sv.inst == nil {
		return sv.sup.log
	}
	return sv.sup.log.With(zap.String("instance", sv.inst.key))
}

// sharedError is the answer of a shared server asked for a child without
// an instance: a subscription, or a call that did not say whom it is for.
func (sv *server) sharedError() error {
	return serverUnavailable(sv.spec.Name, " runs one instance per %s (share %q): it is reached only through calls and subscriptions made for an %s",
		shareUnit(sv.currentSpec().Share), sv.currentSpec().Share, shareUnit(sv.currentSpec().Share))
}

func shareUnit(share string) string {
	if share == ShareRoot {
		return "workspace root"
	}
	return "app"
}

// target is the server a call of the named server goes to: the server, or
// the instance of a shared one that the call's Scope picks.
func (s *Supervisor) target(ctx context.Context, name string) (*server, error) {
	sv, err := s.lookup(name)
	if err != nil || !sv.sharedBase() {
		return sv, err
	}
	return s.instanceFor(ctx, sv)
}

// instanceFor returns the instance of base for ctx's Scope, creating it.
func (s *Supervisor) instanceFor(ctx context.Context, base *server) (*server, error) {
	spec := base.currentSpec()
	sc, _ := ScopeFrom(ctx)
	if spec.Share == ShareRoot && sc.Root == "" && sc.HostRoot != nil {
		sc.Root = sc.HostRoot(ctx)
	}
	key, err := instanceKeyOf(spec, sc)
	if err != nil {
		return nil, err
	}
	if base.sharedStopped.Load() {
		return nil, serverUnavailable(spec.Name, " is stopped; start it with: mcpdctl start %s", spec.Name)
	}
	s.mu.RLock()
	sv := s.instances[spec.Name][key]
	s.mu.RUnlock()
	if sv != nil {
		sv.inst.own(sc)
		return sv, nil
	}
	if spec.Share == ShareRoot {
		if fi, err := os.Stat(key); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: server %q: workspace root %q is not a directory", ErrInvalid, spec.Name, key)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.shuttingDown() {
		return nil, errShuttingDown
	}
	set := s.instances[spec.Name]
	if sv := set[key]; sv != nil {
		sv.inst.own(sc)
		return sv, nil
	}
	if spec.MaxInstances > 0 && len(set) >= spec.MaxInstances {
		return nil, s.limitError(spec, set)
	}
	sv = s.newInstance(spec, key)
	sv.inst.own(sc)
	if set == nil {
		set = map[string]*server{}
		s.instances[spec.Name] = set
	}
	set[key] = sv
	if s.running {
		s.startLoopLocked(sv)
	}
	return sv, nil
}

// instanceKeyOf is the key of the instance of spec that sc picks.
func instanceKeyOf(spec Spec, sc Scope) (string, error) {
	if spec.Share == ShareClient {
		if sc.App == "" {
			return "", fmt.Errorf("%w: server %q runs one instance per app (share %q), and the call does not say which app it is for", ErrInvalid, spec.Name, spec.Share)
		}
		return sc.App, nil
	}
	if sc.Root == "" {
		return "", fmt.Errorf("%w: server %q runs one instance per workspace root (share %q), and the call names none: run the bridge with --root DIR, or send the root in the mcpd-root request metadata, or declare roots as host", ErrInvalid, spec.Name, spec.Share)
	}
	if !filepath.IsAbs(sc.Root) {
		return "", fmt.Errorf("%w: server %q: workspace root %q is not an absolute path", ErrInvalid, spec.Name, sc.Root)
	}
	return filepath.Clean(sc.Root), nil
}

// limitError says that spec has all the instances it may have, and whose.
func (s *Supervisor) limitError(spec Spec, set map[string]*server) error {
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, fmt.Sprintf("%q", k))
	}
	slices.Sort(keys)
	return fmt.Errorf("%w: server %q already runs its maxInstances of %d (one per %s: %s); another starts once one of them goes away",
		ErrInstanceLimit, spec.Name, spec.MaxInstances, shareUnit(spec.Share), strings.Join(keys, ", "))
}

// newInstance makes the instance key of the shared server of spec; s.mu
// is held.
func (s *Supervisor) newInstance(spec Spec, key string) *server {
	in := &instance{key: key, owners: map[uint64]func() bool{}}
	if spec.Share == ShareRoot {
		in.root = key
	}
	sv := newServer(s, in.spec(spec))
	sv.inst = in
	sv.shared.Store(false)
	sv.log = sv.log.With(zap.String("instance", key))
	sv.log.Info("instance created", zap.String("share", spec.Share))
	return sv
}

// spec is the spec of the instance in of a shared server of spec.
func (in *instance) spec(spec Spec) Spec {
	spec.Autostart = false // instances start on demand
	if in.root != "" {
		spec.Cwd = in.root
		spec.RootPaths = []string{in.root}
	}
	return spec
}

// reconfigureInstances hands the new spec of a server whose settings alone
// changed to its instances, which keep their children; a server that is
// now disabled or no longer shared loses them.
func (s *Supervisor) reconfigureInstances(sp Spec) {
	if sp.Disabled || sp.Invalid != "" || !isShared(sp.Share) {
		s.dropInstances(sp.Name, "its config changed")
		return
	}
	s.mu.RLock()
	running := s.running
	s.mu.RUnlock()
	for _, sv := range s.instancesOf(sp.Name) {
		isp := sv.inst.spec(sp)
		if running {
			sv.post(command{kind: cmdReconfigure, spec: &isp})
		} else {
			sv.setSpec(isp)
		}
	}
}

// RequestInstance names the instance of a shared server that sent a
// request to mcpd (the ctx of Options.OnRequest carries it): the host
// that answers it is one of the instance's owners, not any host of the
// server.
type RequestInstance struct {
	// Share is the server's share, Key the instance's key: the app
	// identity of a "client" instance, the root of a "root" one.
	Share, Key string
	// Owners are the connections (Scope.Owner) that own it now.
	Owners []uint64
}

type requestInstanceKey struct{}

// RequestInstanceFrom returns the instance a child request of ctx came
// from, if it came from one.
func RequestInstanceFrom(ctx context.Context) (RequestInstance, bool) {
	ri, ok := ctx.Value(requestInstanceKey{}).(RequestInstance)
	return ri, ok
}

// requestInstance is the RequestInstance of the instance sv.
func (sv *server) requestInstance() RequestInstance {
	ri := RequestInstance{Share: ShareClient, Key: sv.inst.key}
	if sv.inst.root != "" {
		ri.Share = ShareRoot
	}
	sv.inst.mu.Lock()
	for id, alive := range sv.inst.owners {
		if id != 0 && (alive == nil || alive()) {
			ri.Owners = append(ri.Owners, id)
		}
	}
	sv.inst.mu.Unlock()
	slices.Sort(ri.Owners)
	return ri
}

// eventServer is the server (or instance) an event is of.
func (s *Supervisor) eventServer(ev Event) (*server, error) {
	if ev.Instance == "" {
		return s.lookup(ev.Server)
	}
	s.mu.RLock()
	sv := s.instances[ev.Server][ev.Instance]
	s.mu.RUnlock()
	if sv == nil {
		return nil, unknownServer(ev.Server)
	}
	return sv, nil
}

// instancesOf returns the instances of the named server, sorted by key.
func (s *Supervisor) instancesOf(name string) []*server {
	s.mu.RLock()
	out := make([]*server, 0, len(s.instances[name]))
	for _, sv := range s.instances[name] {
		out = append(out, sv)
	}
	s.mu.RUnlock()
	slices.SortFunc(out, func(a, b *server) int { return strings.Compare(a.inst.key, b.inst.key) })
	return out
}

// dropInstances removes every instance of the named server, for why; it
// returns them.
func (s *Supervisor) dropInstances(name, why string) []*server {
	s.mu.Lock()
	set := s.instances[name]
	delete(s.instances, name)
	running := s.running
	s.mu.Unlock()
	out := make([]*server, 0, len(set))
	for _, sv := range set {
		sv.log.Info("instance removed", zap.String("reason", why))
		if running {
			sv.post(command{kind: cmdRemove})
		}
		out = append(out, sv)
	}
	return out
}

// removeInstance removes one instance, if it is still registered.
func (s *Supervisor) removeInstance(name string, sv *server, why string) {
	s.mu.Lock()
	set := s.instances[name]
	mine := set[sv.inst.key] == sv
	if mine {
		delete(set, sv.inst.key)
		if len(set) == 0 {
			delete(s.instances, name)
		}
	}
	running := s.running
	s.mu.Unlock()
	if !mine {
		return
	}
	sv.log.Info("instance removed", zap.String("reason", why))
	if running {
		sv.post(command{kind: cmdRemove})
	}
}

// sweepInstances removes, every InstanceSweep until quit, the instances
// whose owners have been gone for their idle timeout.
func (s *Supervisor) sweepInstances() {
	every := s.opts.InstanceSweep
	if every <= 0 {
		every = DefaultInstanceSweep
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.quit:
			return
		case <-t.C:
			s.sweepOnce()
		}
	}
}

func (s *Supervisor) sweepOnce() {
	type entry struct {
		name string
		sv   *server
	}
	var all []entry
	s.mu.RLock()
	for name, set := range s.instances {
		for _, sv := range set {
			all = append(all, entry{name, sv})
		}
	}
	s.mu.RUnlock()
	now := s.now()
	for _, e := range all {
		gone, ok := e.sv.inst.goneFor(now)
		if !ok || gone < e.sv.currentSpec().IdleTimeout || e.sv.idleBusy() {
			continue
		}
		why := "its app went away"
		if e.sv.inst.root != "" {
			why = "no app uses its root any more"
		}
		s.removeInstance(e.name, e.sv, why)
	}
}

// commandInstances is Start, Stop or Restart of a shared server: Stop
// removes its instances (returning once their children are reaped) and
// refuses new ones until Start or Restart; Restart restarts each instance.
func (s *Supervisor) commandInstances(ctx context.Context, base *server, kind cmdKind) error {
	name := base.spec.Name
	switch kind {
	case cmdStop:
		base.sharedStopped.Store(true)
		for _, sv := range s.dropInstances(name, "the server was stopped") {
			select {
			case <-sv.rl.gone:
			case <-ctx.Done():
				return fmt.Errorf("stop %q: %w", name, context.Cause(ctx))
			}
		}
		return nil
	case cmdRestart:
		base.sharedStopped.Store(false)
		var errs []error
		for _, sv := range s.instancesOf(name) {
			if err := sv.send(ctx, cmdRestart); err != nil {
				errs = append(errs, fmt.Errorf("instance %q: %w", sv.inst.key, err))
			}
		}
		return errors.Join(errs...)
	default:
		base.sharedStopped.Store(false)
		return nil
	}
}

// sharedStatus is the status of sv; a shared server's lists its instances
// and is ready while one of them is.
func (s *Supervisor) sharedStatus(sv *server) Status {
	st := sv.status()
	if !sv.sharedBase() {
		return st
	}
	st.ExplicitlyStopped = sv.sharedStopped.Load()
	for _, in := range s.instancesOf(sv.spec.Name) {
		is := in.status()
		st.Instances = append(st.Instances, is)
		if is.State == StateReady {
			st.State = StateReady
		}
		st.CallsInFlight += is.CallsInFlight
		st.CallsTotal += is.CallsTotal
		st.CallsFailed += is.CallsFailed
		st.Restarts += is.Restarts
	}
	return st
}

// instanceLogs returns up to n recent stderr lines of a shared server's
// instances, oldest first, each prefixed with its instance's key.
func (s *Supervisor) instanceLogs(base *server, n int) []transport.Line {
	var out []transport.Line
	for _, sv := range s.instancesOf(base.spec.Name) {
		for _, l := range sv.ring.Last(n) {
			l.Text = "[" + sv.inst.key + "] " + l.Text
			out = append(out, l)
		}
	}
	slices.SortStableFunc(out, func(a, b transport.Line) int { return a.Time.Compare(b.Time) })
	if len(out) > n && n > 0 {
		out = out[len(out)-n:]
	}
	return out
}

// ShareOf returns the share of the named server ("" when unknown).
func (s *Supervisor) ShareOf(name string) string {
	sv, err := s.lookup(name)
	if err != nil {
		return ""
	}
	return normShare(sv.currentSpec().Share)
}

// Shared reports whether any configured server runs instances, so that
// the API gives calls a Scope only then. Safe from any goroutine.
func (s *Supervisor) Shared() bool { return s.sharedCount.Load() > 0 }

// recountShared updates what Shared reports; s.mu is held.
func (s *Supervisor) recountShared() {
	n := int32(0)
	for _, sv := range s.servers {
		if isShared(sv.currentSpec().Share) {
			n++
		}
	}
	s.sharedCount.Store(n)
}

// recountSharedWith is recountShared for the specs an Apply installs.
func (s *Supervisor) recountSharedWith(want map[string]Spec) {
	n := int32(0)
	for _, sp := range want {
		if isShared(sp.Share) {
			n++
		}
	}
	s.sharedCount.Store(n)
}
