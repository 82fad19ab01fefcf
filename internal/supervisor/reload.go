package supervisor

import (
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
	want := s.wantedSpecs(specs)

	s.mu.Lock()
	rp := s.swapServersLocked(want)
	s.mu.Unlock()

	s.postReload(rp, want)
	res := rp.res
	sortResult(&res)
	s.subsOnApply(res) // subscriptions.go
	s.log.Info("config applied", zap.Strings("added", res.Added), zap.Strings("removed", res.Removed),
		zap.Strings("restarted", res.Restarted), zap.Strings("updated", res.Updated), zap.Int("unchanged", len(res.Unchanged)))
	return res, nil
}

// wantedSpecs are specs by name, without those with an empty name and,
// with a warning, the later ones of a duplicate name.
func (s *Supervisor) wantedSpecs(specs []Spec) map[string]Spec {
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
	return want
}

// specUpdate is a new spec for a running server; restart says its process
// identity changed.
type specUpdate struct {
	sv      *server
	spec    Spec
	restart bool
}

// reloadPlan is what swapServersLocked left for the servers' loops to do.
type reloadPlan struct {
	res     ApplyResult // unsorted
	updates []specUpdate
	removed []*server // removed servers with something to drain
	running bool      // whether the loops run (s.running then)
}

// swapServersLocked makes want the server map at once: removed servers
// leave it, added ones join it (their loop started if the supervisor
// runs), and the others are compared with their new spec. When no loop
// runs yet it installs the new specs itself, so the plan has no updates.
// s.mu must be held.
func (s *Supervisor) swapServersLocked(want map[string]Spec) reloadPlan {
	var rp reloadPlan
	for name, sv := range s.servers {
		if _, ok := want[name]; !ok {
			delete(s.servers, name)
			rp.res.Removed = append(rp.res.Removed, name)
			if !sv.removeDormantLocked() { // dormant.go: nothing to drain
				rp.removed = append(rp.removed, sv)
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
			rp.res.Added = append(rp.res.Added, name)
			continue
		}
		switch CompareSpecs(sv.currentSpec(), sp) {
		case SpecUnchanged:
			rp.res.Unchanged = append(rp.res.Unchanged, name)
		case SpecSettings:
			rp.updates = append(rp.updates, specUpdate{sv, sp, false})
			rp.res.Updated = append(rp.res.Updated, name)
		case SpecIdentity:
			rp.updates = append(rp.updates, specUpdate{sv, sp, true})
			rp.res.Restarted = append(rp.res.Restarted, name)
		}
	}
	rp.running = s.running
	s.recountSharedWith(want) // instances.go
	if !rp.running {
		// No loop runs yet: install the specs here, under s.mu, which Run
		// takes before it starts the loops.
		for _, u := range rp.updates {
			u.sv.setSpec(u.spec)
			u.sv.cache.SetPolicy(parseCachePolicy(u.sv, u.spec))
		}
		rp.updates = nil
	}
	return rp
}

// postReload hands the servers' loops their part of rp and updates the
// shared instances. It runs outside s.mu: the loops take their commands
// (never calling out with a lock held).
func (s *Supervisor) postReload(rp reloadPlan, want map[string]Spec) {
	// Changed servers first, removed ones last ("start new or changed
	// servers before stopping removed ones").
	for _, u := range rp.updates {
		sp := u.spec
		u.sv.post(command{kind: cmdReconfigure, spec: &sp, restart: u.restart})
	}
	for _, sv := range rp.removed {
		if rp.running {
			sv.post(command{kind: cmdRemove})
		}
	}
	// The instances of a removed server or one whose identity changed go;
	// the next calls start new ones from the new spec. Those of a server
	// whose settings alone changed take them (instances.go).
	for _, name := range slices.Concat(rp.res.Removed, rp.res.Restarted) {
		s.dropInstances(name, "its config changed")
	}
	for _, name := range rp.res.Updated {
		s.reconfigureInstances(want[name])
	}
}

// sortResult sorts every list of res.
func sortResult(res *ApplyResult) {
	for _, l := range []*[]string{&res.Added, &res.Removed, &res.Restarted, &res.Updated, &res.Unchanged} {
		slices.Sort(*l)
	}
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
	sortResult(&res)
	return res
}
