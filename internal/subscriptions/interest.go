package subscriptions

import (
	"maps"
	"slices"
	"sync"
)

// This file keeps the union of what the open streams want from each
// server as counts, updated by each stream's own changes (open, update,
// end, a reload removing a server), so that a reconcile reads the union
// in O(its URIs) and a stream that leaves learns at once whether it
// shrank: subscribing and leaving cost the same with ten open streams or
// ten thousand. The counts are per server; while some server runs
// instances (InstanceSource.Shared), a stream's instance depends on the
// current config, and the union of a target is read from every stream
// instead (union, leave.go).

// interest is the counted union of every open stream's wants.
type interest struct {
	mu      sync.Mutex        // guards the fields below and Stream.counted*; taken before Stream.mu
	servers map[string]*tally // by server, from the streams that name it
	all     tally             // the kinds of the streams watching every server
}

// tally counts, for one server, the streams wanting each kind and each URI.
type tally struct {
	tools, prompts, resources, logs int
	uris                            map[string]int
	// sorted is the keys of uris, sorted, shared read-only with union's
	// callers; nil when it must be built again.
	sorted []string
}

// change replaces a stream's old wants by its new ones (either may be
// empty) and reports whether the union changed: a kind or a URI gained its
// first stream or lost its last. Only the difference is counted.
func (t *tally) change(old, new wants) bool {
	changed := false
	count := func(c *int, was, is bool) {
		switch {
		case is && !was:
			*c++
			changed = changed || *c == 1
		case was && !is:
			*c--
			changed = changed || *c == 0
		}
	}
	count(&t.tools, old.tools, new.tools)
	count(&t.prompts, old.prompts, new.prompts)
	count(&t.resources, old.resources, new.resources)
	count(&t.logs, old.logs, new.logs)
	walkSorted(old.uris, new.uris, func(uri string, was, is bool) {
		switch {
		case is && !was:
			if t.uris == nil {
				t.uris = map[string]int{}
			}
			t.uris[uri]++
			if t.uris[uri] == 1 {
				changed, t.sorted = true, nil
			}
		case was && !is:
			if t.uris[uri]--; t.uris[uri] <= 0 {
				delete(t.uris, uri)
				changed, t.sorted = true, nil
			}
		}
	})
	return changed
}

// empty reports whether no stream wants anything.
func (t *tally) empty() bool {
	return t.tools == 0 && t.prompts == 0 && t.resources == 0 && t.logs == 0 && len(t.uris) == 0
}

// wants is the union the tally holds; its URIs are shared read-only.
func (t *tally) wants() wants {
	if t.sorted == nil && len(t.uris) > 0 {
		t.sorted = slices.Clip(slices.Sorted(maps.Keys(t.uris)))
	}
	return wants{tools: t.tools > 0, prompts: t.prompts > 0, resources: t.resources > 0, logs: t.logs > 0, uris: t.sorted}
}

// recount brings st's contribution to the counts in line with what it
// wants now, and returns the servers whose union changed, and whether that
// of every server did (a stream watching every server). It costs
// O(st's servers and URIs), whatever the number of streams.
func (m *Manager) recount(st *Stream) (changed []string, all bool) {
	ix := &m.interest
	ix.mu.Lock()
	defer ix.mu.Unlock()
	now := map[string]wants{}
	var nowAll wants
	st.mu.Lock()
	if !st.ended {
		flags := wants{tools: st.watch.ToolsListChanged, prompts: st.watch.PromptsListChanged,
			resources: st.watch.ResourcesListChanged, logs: st.watch.Logs}
		if st.servers == nil {
			nowAll = flags
		}
		for server := range st.servers {
			w := flags
			w.uris = st.sortedLocked(server)
			if w.any() {
				now[server] = w
			}
		}
	}
	st.mu.Unlock()
	all = ix.all.change(st.countedAll, nowAll)
	st.countedAll = nowAll
	apply := func(server string, old, new wants) {
		t := ix.servers[server]
		if t == nil {
			if ix.servers == nil {
				ix.servers = map[string]*tally{}
			}
			t = &tally{}
			ix.servers[server] = t
		}
		if t.change(old, new) {
			changed = append(changed, server)
		}
		if t.empty() {
			delete(ix.servers, server)
		}
	}
	for server, old := range st.counted {
		apply(server, old, now[server])
	}
	for server, w := range now {
		if _, ok := st.counted[server]; !ok {
			apply(server, wants{}, w)
		}
	}
	st.counted = now
	return changed, all
}

// countedUnion is the union of what the streams want from server (its
// own child: no instances), from the counts.
func (m *Manager) countedUnion(server string) wants {
	ix := &m.interest
	ix.mu.Lock()
	defer ix.mu.Unlock()
	w := ix.all.wants()
	if t := ix.servers[server]; t != nil {
		tw := t.wants()
		w.tools, w.prompts = w.tools || tw.tools, w.prompts || tw.prompts
		w.resources, w.logs = w.resources || tw.resources, w.logs || tw.logs
		w.uris = tw.uris
	}
	return w
}

// routed reports whether some server runs instances, so that which
// upstream a stream reaches depends on its scope (instances.go).
func (m *Manager) routed() bool {
	is, ok := m.opts.Source.(InstanceSource)
	return ok && is.Shared()
}
