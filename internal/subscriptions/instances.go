package subscriptions

import (
	"context"
	"encoding/json"
	"slices"
)

// This file routes the streams of shared servers (one instance per app or
// per workspace root, supervisor instances.go): a stream reaches, of such a
// server, the instance that its app's scope (AppInfo.Scope) picks, by the
// same rules as the app's calls. Each instance has its own upstream, keyed
// by Target: what the streams routed to it want is subscribed on its child
// alone, and what its child announces reaches those streams alone. The
// upstream starts its instance on demand, re-sends the subscriptions after
// the instance's child restarts or the instance is replaced, and goes
// (goroutine and all) once no stream is routed to it any more.

// Target is what an upstream subscription is held on: the child of a
// server, or that of one instance of a shared server.
type Target struct {
	Server string
	// Instance is the instance's key; "" for a server that runs one child.
	Instance string
}

// InstanceSource is implemented by a Source whose servers may run one
// instance per app or per root.
type InstanceSource interface {
	// Shared reports whether any server runs instances (else every
	// stream reaches every server's one child).
	Shared() bool
	// Instance returns the key of the instance of server that scope (an
	// AppInfo.Scope) reaches: "" for a server that runs one child, an
	// error when scope reaches none (it names no app or root).
	Instance(server string, scope any) (string, error)
	// AcquireInstance is Acquire for the instance key of server, created
	// for scope when it does not run.
	AcquireInstance(ctx context.Context, server, key string, scope any) (Child, error)
}

// route returns the instance of server that st reaches ("" for a server
// that runs one child).
func (m *Manager) route(st *Stream, server string) (string, error) {
	is, ok := m.opts.Source.(InstanceSource)
	if !ok || !is.Shared() {
		return "", nil
	}
	return is.Instance(server, st.app.Scope)
}

// wantsOf is what st needs upstream from t: nothing unless st reaches t.
func (m *Manager) wantsOf(st *Stream, t Target) wants {
	if key, err := m.route(st, t.Server); err != nil || key != t.Instance {
		return wants{}
	}
	return st.wantsFrom(t.Server)
}

// reaches reports whether ev, of a server's child or of one instance,
// is for st's instance of that server. What a reload did to the server
// (added, removed) reaches every stream watching it, and what it did to a
// profile's view of it every stream of that profile watching it.
func (m *Manager) reaches(st *Stream, ev *Event) bool {
	if ev.profile != "" { // every instance shows the profile's view
		if st.app.Profile != ev.profile {
			return false
		}
		_, err := m.route(st, ev.Server)
		return err == nil
	}
	if ev.Kind == KindState && (ev.State == StateAdded || ev.State == StateRemoved) {
		return true
	}
	key, err := m.route(st, ev.Server)
	return err == nil && key == ev.inst
}

// targetsOf returns the targets of server that the open streams want
// something from.
func (m *Manager) targetsOf(server string) []Target {
	var out []Target
	for _, st := range m.openStreams() {
		key, err := m.route(st, server)
		t := Target{server, key}
		if err != nil || slices.Contains(out, t) || !st.wantsFrom(server).any() {
			continue
		}
		out = append(out, t)
	}
	return out
}

// upstreamsOf returns the upstreams of server, its instances' included.
func (m *Manager) upstreamsOf(server string) []*upstream {
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*upstream
	for t, u := range m.upstreams {
		if t.Server == server {
			out = append(out, u)
		}
	}
	return out
}

// openStreams returns the registered streams.
func (m *Manager) openStreams() []*Stream {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Stream, 0, len(m.streams))
	for _, st := range m.streams {
		out = append(out, st)
	}
	return out
}

// dropIdle removes the upstream of an instance that no stream wants
// anything from, unless interest changed since version v (loop only). It
// reports whether u was removed: its loop then ends.
func (m *Manager) dropIdle(u *upstream, v uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.version != v || m.upstreams[u.target()] != u {
		return false
	}
	delete(m.upstreams, u.target())
	u.retired = true
	u.gone = "server " + quote(u.name) + ": the subscriptions of instance " + quote(u.inst) + " ended"
	return true
}

// OnInstanceNotification is OnNotification for the child of the instance
// key of server: it reaches the streams routed to that instance alone.
func (m *Manager) OnInstanceNotification(server, key, method string, params json.RawMessage) {
	m.notification(Target{server, key}, method, params)
}

// HasDemandOn is HasDemand for a target (an instance's child included).
func (m *Manager) HasDemandOn(t Target) bool {
	w, _ := m.union(t)
	return w.any()
}
