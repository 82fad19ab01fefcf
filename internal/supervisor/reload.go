package supervisor

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// This file applies a new config to a running supervisor (live reload).
//
// Apply diffs the new server set against the current one under s.mu, so
// that an app sees either the old or the new set, never a mix:
//
//   - added servers get a server and a loop (autostart ones start);
//   - removed servers leave the map at once (new calls get "unknown
//     server"), and their loop stops the child once the calls in flight on it
//     have finished, within DrainTimeout, then exits;
//   - servers whose process identity changed (command, args, env, cwd,
//     protocol) get the new spec and are restarted once their calls in
//     flight have finished (bounded the same way); the subscription manager
//     sees the child go and re-sends every subscription to the new one;
//   - servers whose settings alone changed (timeouts, cache, restart policy,
//     autostart, ...) are updated in place: same process, same pid;
//   - untouched servers are not touched at all.
//
// The per-server part runs on the server's loop goroutine (cmdReconfigure,
// cmdRemove), like every other state change.

// DefaultDrainTimeout bounds how long a removed or restarted server waits
// for its calls in flight before its child is stopped anyway.
const DefaultDrainTimeout = 30 * time.Second

// Commands of the reload, handled by handleReload on the server's loop.
const (
	cmdReconfigure cmdKind = 100 + iota // command.spec: the new spec
	cmdRemove
)

// ApplyResult says what Apply did, by server name; every list is sorted.
type ApplyResult struct {
	Added []string
	// Removed servers are stopped after their calls in flight finish.
	Removed []string
	// Restarted servers' process identity changed (command, args, env, cwd,
	// protocol); they restart after their calls in flight finish.
	Restarted []string
	// Updated servers' settings changed; they keep their process.
	Updated   []string
	Unchanged []string
}

// Changed reports whether Apply changed anything.
func (r ApplyResult) Changed() bool {
	return len(r.Added)+len(r.Removed)+len(r.Restarted)+len(r.Updated) > 0
}

// SpecChange is how a new spec of a server differs from the running one.
type SpecChange int

const (
	// SpecUnchanged: nothing differs.
	SpecUnchanged SpecChange = iota
	// SpecSettings: only settings differ; applied in place.
	SpecSettings
	// SpecIdentity: the process identity differs; the server restarts.
	SpecIdentity
)

// CompareSpecs reports how spec b differs from spec a (same name assumed).
func CompareSpecs(a, b Spec) SpecChange {
	if a.Command != b.Command || !slices.Equal(a.Args, b.Args) || !maps.Equal(a.Env, b.Env) ||
		a.Cwd != b.Cwd || normProtocol(a.Protocol) != normProtocol(b.Protocol) ||
		// The client capabilities are declared once, at initialize.
		boolOn(a.Roots) != boolOn(b.Roots) || boolOn(a.Sampling) != boolOn(b.Sampling) ||
		boolOn(a.Elicitation) != boolOn(b.Elicitation) || a.Invalid != b.Invalid ||
		!reflect.DeepEqual(a.ClientCapabilities, b.ClientCapabilities) ||
		// A remote server's URL, type, headers or OAuth client: another connection.
		!reflect.DeepEqual(a.Remote, b.Remote) || !reflect.DeepEqual(a.Sandbox, b.Sandbox) ||
		normShare(a.Share) != normShare(b.Share) {
		return SpecIdentity
	}
	a.Args, b.Args, a.Env, b.Env = nil, nil, nil, nil
	a.Protocol, b.Protocol, a.Remote, b.Remote = "", "", nil, nil
	a.Roots, b.Roots, a.Sampling, b.Sampling, a.Elicitation, b.Elicitation = nil, nil, nil, nil, nil, nil
	a.ClientCapabilities, b.ClientCapabilities = nil, nil
	if !reflect.DeepEqual(a, b) {
		return SpecSettings
	}
	return SpecUnchanged
}

// boolOn reads a *bool whose nil means on.
func boolOn(b *bool) bool { return b == nil || *b }

func normProtocol(p string) string {
	if p == "" {
		return session.ProtocolAuto
	}
	return p
}

// Apply makes specs the configured server set, changing only what differs
// (see the top of reload.go). It returns once every server has taken its
// new spec; removals and restarts then proceed in the background (status
// shows them). Specs with an empty or duplicate name are ignored, as in New.
// Apply is safe to call concurrently with everything else, before or during
// Run; calls are serialized.
func (s *Supervisor) Apply(specs []Spec) (ApplyResult, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if s.shuttingDown() {
		return ApplyResult{}, errShuttingDown
	}
	want := make(map[string]Spec, len(specs))
	for _, sp := range specs {
		if sp.Name == "" {
			continue
		}
		if _, dup := want[sp.Name]; dup {
			s.log.Warn("duplicate server name ignored", zap.String("server", sp.Name))
			continue
		}
		want[sp.Name] = sp
	}

	var res ApplyResult
	type update struct {
		sv      *server
		spec    Spec
		restart bool
	}
	var updates []update
	var removed []*server

	s.mu.Lock()
	for name, sv := range s.servers {
		if _, ok := want[name]; !ok {
			delete(s.servers, name)
			res.Removed = append(res.Removed, name)
			if !sv.removeDormantLocked() { // dormant.go: nothing to drain
				removed = append(removed, sv)
			}
		}
	}
	for name, sp := range want {
		sv, ok := s.servers[name]
		if !ok {
			sv = newServer(s, sp)
			s.servers[name] = sv
			if s.running {
				s.startLoopIfNeededLocked(sv) // dormant.go
			}
			res.Added = append(res.Added, name)
			continue
		}
		switch CompareSpecs(sv.currentSpec(), sp) {
		case SpecUnchanged:
			res.Unchanged = append(res.Unchanged, name)
		case SpecSettings:
			updates = append(updates, update{sv, sp, false})
			res.Updated = append(res.Updated, name)
		case SpecIdentity:
			updates = append(updates, update{sv, sp, true})
			res.Restarted = append(res.Restarted, name)
		}
	}
	running := s.running
	s.recountSharedWith(want) // instances.go
	if !running {
		// No loop runs yet: install the specs here, under s.mu, which Run
		// takes before it starts the loops.
		for _, u := range updates {
			u.sv.setSpec(u.spec)
			u.sv.cache.SetPolicy(parseCachePolicy(u.sv, u.spec))
		}
		updates = nil
	}
	s.mu.Unlock()

	// Outside s.mu: the loops take their commands (never calling out with
	// a lock held). Changed servers first, removed ones last ("start new or
	// changed servers before stopping removed ones").
	for _, u := range updates {
		sp := u.spec
		u.sv.post(command{kind: cmdReconfigure, spec: &sp, restart: u.restart})
	}
	for _, sv := range removed {
		if running {
			sv.post(command{kind: cmdRemove})
		}
	}
	// The instances of a removed server or one whose identity changed go;
	// the next calls start new ones from the new spec. Those of a server
	// whose settings alone changed take them (instances.go).
	for _, name := range slices.Concat(res.Removed, res.Restarted) {
		s.dropInstances(name, "its config changed")
	}
	for _, name := range res.Updated {
		s.reconfigureInstances(want[name])
	}
	for _, l := range []*[]string{&res.Added, &res.Removed, &res.Restarted, &res.Updated, &res.Unchanged} {
		slices.Sort(*l)
	}
	s.subsOnApply(res) // subscriptions.go
	s.log.Info("config applied", zap.Strings("added", res.Added), zap.Strings("removed", res.Removed),
		zap.Strings("restarted", res.Restarted), zap.Strings("updated", res.Updated), zap.Int("unchanged", len(res.Unchanged)))
	return res, nil
}

// Spec returns the current spec of the named server, found by name
// (ErrUnknownServer if there is none): per-server status uses it, so that
// a status of N servers costs N lookups, not N copies and sorts of all.
func (s *Supervisor) Spec(name string) (Spec, error) {
	sv, err := s.lookup(name)
	if err != nil {
		return Spec{}, err
	}
	return sv.currentSpec(), nil
}

// Specs returns the specs of the configured servers, sorted by name.
func (s *Supervisor) Specs() []Spec {
	s.mu.Lock()
	servers := make([]*server, 0, len(s.servers))
	for _, sv := range s.servers {
		servers = append(servers, sv)
	}
	s.mu.Unlock()
	out := make([]Spec, 0, len(servers))
	for _, sv := range servers {
		out = append(out, sv.currentSpec())
	}
	slices.SortFunc(out, func(a, b Spec) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func (s *Supervisor) drainTimeout() time.Duration {
	if s.opts.DrainTimeout > 0 {
		return s.opts.DrainTimeout
	}
	return DefaultDrainTimeout
}

func parseCachePolicy(sv *server, spec Spec) cache.Policy {
	p, err := cache.ParsePolicy(spec.Cache)
	if err != nil {
		sv.log.Warn("invalid cache policy ignored", zap.String("cache", spec.Cache), zap.Error(err))
	}
	return p
}

// reloadState is the reload part of a server.
type reloadState struct {
	// idle receives a token whenever the calls in flight drop to zero.
	idle chan struct{}
	// gone is closed when the loop has exited (a removed server); commands
	// sent after it fail instead of blocking.
	gone chan struct{}

	// Loop-owned.
	drainedC <-chan struct{} // receives when a drain finished; nil when none runs
	pending  cmdKind         // after the drain: cmdReconfigure (restart) or cmdRemove
	// restartWhenReady: a start of the old spec was under way when the
	// identity changed; restart as soon as it is ready.
	restartWhenReady bool
}

func newReloadState() reloadState {
	return reloadState{idle: make(chan struct{}, 1), gone: make(chan struct{})}
}

// callDone ends one call in flight (Supervisor.Call).
func (sv *server) callDone() {
	sv.idleTouch() // idle.go
	if sv.inFlight.Add(-1) == 0 {
		select {
		case sv.rl.idle <- struct{}{}:
		default:
		}
	}
}

// currentSpec returns a copy of the server's spec; safe from any goroutine.
func (sv *server) currentSpec() Spec {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	sp := sv.spec
	sp.Args = slices.Clone(sp.Args)
	sp.Env = maps.Clone(sp.Env)
	return sp
}

// setSpec installs a new spec of the same name. It writes field by field,
// never the name, which other goroutines read without the lock (it never
// changes). Only the loop (or Apply before Run) calls it.
func (sv *server) setSpec(sp Spec) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	o := &sv.spec
	o.Command, o.Args, o.Env, o.Cwd, o.Protocol = sp.Command, slices.Clone(sp.Args), maps.Clone(sp.Env), sp.Cwd, sp.Protocol
	o.Autostart, o.Restart = sp.Autostart, sp.Restart
	o.RequestTimeout, o.ShutdownGrace, o.DiscoverTimeout = sp.RequestTimeout, sp.ShutdownGrace, sp.DiscoverTimeout
	o.MaxLineSize, o.Disabled, o.Cache = sp.MaxLineSize, sp.Disabled, sp.Cache
	o.Roots, o.Sampling, o.Elicitation = sp.Roots, sp.Sampling, sp.Elicitation
	o.ClientCapabilities = sp.ClientCapabilities // never modified once made
	o.RootPaths = slices.Clone(sp.RootPaths)
	o.IdleTimeout, o.StdinTimeout = sp.IdleTimeout, sp.StdinTimeout
	o.Remote = sp.Remote // never modified once made
	o.Sandbox = sp.Sandbox
	o.Invalid = sp.Invalid
	o.Pin = sp.Pin
	o.Share, o.MaxInstances = sp.Share, sp.MaxInstances
	sv.shared.Store(sv.inst == nil && isShared(sp.Share))
}

// post hands cmd to the loop and returns once the loop has applied it (a
// reconfigure has installed the new spec, a removal has begun draining), or
// the loop is gone, or the supervisor shuts down. What the command starts
// (drains, restarts) goes on in the background.
func (sv *server) post(cmd command) {
	cmd.ctx = context.Background()
	cmd.reply = make(chan reply, 1)
	sv.wake() // dormant.go
	select {
	case sv.cmds <- cmd:
	case <-sv.rl.gone:
		return
	case <-sv.sup.quit:
		return
	}
	select {
	case <-cmd.reply:
	case <-sv.rl.gone:
	case <-sv.sup.quit:
	}
}

// handleReload handles cmdReconfigure and cmdRemove (loop only); it reports
// whether cmd was one of them.
func (sv *server) handleReload(cmd command) bool {
	switch cmd.kind {
	case cmdReconfigure:
		if !sv.shutting {
			sv.reconfigure(*cmd.spec, cmd.restart)
		}
		cmd.reply <- reply{}
		return true
	case cmdRemove:
		if !sv.shutting {
			sv.log.Info("server removed from the config")
			sv.rl.restartWhenReady = false
			sv.startDrain(cmdRemove)
		}
		cmd.reply <- reply{}
		return true
	}
	return false
}

// reconfigure installs spec (loop only) and restarts the child if its
// process identity changed.
func (sv *server) reconfigure(spec Spec, restart bool) {
	old := sv.spec
	sv.setSpec(spec)
	if old.Cache != spec.Cache {
		sv.cache.SetPolicy(parseCachePolicy(sv, spec))
	}
	sv.log.Info("server config updated", zap.Bool("restart", restart))
	if restart {
		// A new command may be another server: forget the era verdict.
		sv.verdict = ""
		sv.cache.Clear()
	} else {
		sv.announceRoots(old, spec) // roots.go
	}
	if spec.Invalid != "" {
		sv.reconfigureInvalid() // invalid.go
		return
	}
	if old.Invalid != "" {
		sv.update(func(st *snapshot) { st.lastError = "" })
	}
	switch {
	case spec.Disabled:
		if !old.Disabled || old.Invalid != "" {
			sv.disable()
		}
		return
	case sv.rl.drainedC != nil:
		// A restart is already waiting for the drain; it uses the new spec.
		return
	}
	switch sv.state {
	case StateFailed, StateCrashLoop:
		if restart || old.Disabled || old.Invalid != "" {
			// The config was fixed (or changed): try again from scratch.
			sv.forgetExits()
			sv.stopTimer()
			sv.setState(StateStopped)
			if sv.demand() {
				sv.beginStart()
			}
		}
		return
	case StateBackoff:
		// The pending restart will use the new spec.
		return
	}
	if restart && sv.cur != nil {
		sv.startDrain(cmdReconfigure)
		return
	}
	if restart && sv.startCancel != nil {
		sv.rl.restartWhenReady = true
		return
	}
	if sv.state == StateStopped && sv.cur == nil && sv.startCancel == nil && !sv.explicitStop &&
		spec.Autostart && (old.Disabled || !old.Autostart || restart) {
		sv.beginStart()
	}
}

// disable stops the child of a server the config now disables; unlike an
// operator's stop, enabling it again in the config brings it back.
func (sv *server) disable() {
	errDisabled := serverUnavailable(sv.spec.Name, " is disabled in the config")
	sv.stopTimer()
	sv.startAfter = false
	sv.replyAll(&sv.waiters, reply{err: errDisabled})
	sv.replyAll(&sv.startWaiters, reply{err: errDisabled})
	switch {
	case sv.cur != nil:
		sv.stopChild(errDisabled)
		sv.setState(StateStopping)
	case sv.startCancel != nil:
		sv.startCancel(errDisabled)
		sv.setState(StateStopping)
	default:
		sv.setState(StateStopped)
	}
}

// startDrain waits (in a goroutine) for the calls in flight to finish, at
// most DrainTimeout, then runs the pending action on the loop (afterDrain).
func (sv *server) startDrain(action cmdKind) {
	if action == cmdRemove || sv.rl.pending == 0 {
		sv.rl.pending = action
	}
	if sv.rl.drainedC != nil {
		return
	}
	done := make(chan struct{}, 1)
	sv.rl.drainedC = done
	bound := sv.sup.drainTimeout()
	sv.wg.Add(1)
	go func() {
		defer sv.wg.Done()
		defer func() { done <- struct{}{} }()
		timeout, stop := sv.sup.after(bound)
		defer stop()
		for sv.inFlight.Load() > 0 {
			select {
			case <-sv.rl.idle:
			case <-timeout:
				sv.log.Warn("calls still in flight after the drain timeout; stopping anyway",
					zap.Int64("calls_in_flight", sv.inFlight.Load()), zap.Duration("drain_timeout", bound))
				return
			case <-sv.sup.quit:
				return
			}
		}
	}()
}

// afterDrain runs the action the drain was waiting for (loop only).
func (sv *server) afterDrain() {
	action := sv.rl.pending
	sv.rl.drainedC, sv.rl.pending = nil, 0
	if sv.shutting {
		return
	}
	switch action {
	case cmdRemove:
		sv.remove()
	case cmdReconfigure:
		sv.restartForReload()
	}
}

// afterEvent runs after every event of the loop (loop only): it restarts a
// child that a start of an outdated spec just made ready.
func (sv *server) afterEvent() {
	if !sv.rl.restartWhenReady || sv.startCancel != nil || sv.rl.drainedC != nil {
		return
	}
	sv.rl.restartWhenReady = false
	if sv.cur != nil && sv.state == StateReady && !sv.shutting {
		sv.startDrain(cmdReconfigure)
	}
}

// remove stops the server for good; the loop exits once the child is reaped.
func (sv *server) remove() {
	errRemoved := serverUnavailable(sv.spec.Name, " was removed from the config")
	sv.shutting = true
	sv.stopTimer()
	sv.startAfter = false
	sv.replyAll(&sv.waiters, reply{err: errRemoved})
	sv.replyAll(&sv.startWaiters, reply{err: errRemoved})
	if sv.startCancel != nil {
		sv.startCancel(errRemoved)
	}
	if sv.cur != nil {
		sv.stopChild(errRemoved)
	}
	if sv.cur != nil || sv.startCancel != nil {
		sv.setState(StateStopping)
	}
}

// restartForReload replaces the child with one of the new spec (loop only).
func (sv *server) restartForReload() {
	cause := serverUnavailable(sv.spec.Name, " is restarting for a config change")
	sv.forgetExits()
	switch {
	case sv.spec.Invalid != "" && sv.cur == nil && sv.startCancel == nil:
		// The child went away during the drain: nothing to stop.
		sv.failInvalid() // invalid.go
	case sv.cur != nil:
		sv.restartNext = true
		sv.stopChild(cause)
		sv.startAfter = true
		sv.setState(StateStopping)
	case sv.startCancel != nil:
		// A start is under way (the child exited during the drain and is
		// being restarted): restart once it is ready, in case it spawned the
		// old spec.
		sv.rl.restartWhenReady = true
	default:
		if sv.state == StateStopped && !sv.explicitStop && sv.demand() {
			sv.beginStart()
		}
	}
}

// configuredProtocol is the spec's protocol; safe from any goroutine.
func (sv *server) configuredProtocol() string {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	return sv.spec.Protocol
}

// Diff reports what Apply(specs) would change now, changing nothing.
func (s *Supervisor) Diff(specs []Spec) ApplyResult {
	var res ApplyResult
	want := map[string]bool{}
	current := map[string]Spec{}
	for _, sp := range s.Specs() {
		current[sp.Name] = sp
	}
	for _, sp := range specs {
		if sp.Name == "" || want[sp.Name] {
			continue
		}
		want[sp.Name] = true
		old, ok := current[sp.Name]
		if !ok {
			res.Added = append(res.Added, sp.Name)
			continue
		}
		switch CompareSpecs(old, sp) {
		case SpecUnchanged:
			res.Unchanged = append(res.Unchanged, sp.Name)
		case SpecSettings:
			res.Updated = append(res.Updated, sp.Name)
		case SpecIdentity:
			res.Restarted = append(res.Restarted, sp.Name)
		}
	}
	for name := range current {
		if !want[name] {
			res.Removed = append(res.Removed, name)
		}
	}
	for _, l := range []*[]string{&res.Added, &res.Removed, &res.Restarted, &res.Updated, &res.Unchanged} {
		slices.Sort(*l)
	}
	return res
}
