package subscriptions

import "slices"

// This file releases the upstream interest of a stream that ends (closed,
// or lagged). The union of what the streams want from a server is read
// from every open stream, so a reconcile costs O(open streams): when an
// app leaves and another stream still wants all it wanted, which is the
// common case, the union cannot change and no reconcile is asked for.

// interests is what st wants from each upstream target now, before it
// ends (targets it wants nothing from are left out).
func (m *Manager) interests(st *Stream) map[Target]wants {
	m.mu.RLock()
	targets := make([]Target, 0, len(m.upstreams))
	for t := range m.upstreams {
		targets = append(targets, t)
	}
	m.mu.RUnlock()
	out := map[Target]wants{}
	for _, t := range targets {
		if w := m.wantsOf(st, t); w.any() {
			out[t] = w
		}
	}
	return out
}

// release records, after st ended, a change of interest on the upstreams
// of servers (nil: every server) whose union st's leaving may shrink:
// those it wanted something from (leaving) that no other stream still
// wants as well.
func (m *Manager) release(servers map[string]bool, leaving map[Target]wants) {
	m.mu.RLock()
	var ups []*upstream
	for t, u := range m.upstreams {
		if servers != nil && !servers[t.Server] {
			continue
		}
		if w, ok := leaving[t]; ok && !m.wantedByOthersLocked(t, w) {
			ups = append(ups, u)
		}
	}
	m.mu.RUnlock()
	for _, u := range ups {
		u.changed()
	}
}

// wantedByOthersLocked reports whether an open stream wants from t all
// that w holds (an ended stream wants nothing). m.mu is held (read), and
// each stream's lock is taken in turn, as publish does.
func (m *Manager) wantedByOthersLocked(t Target, w wants) bool {
	for _, st := range m.streams {
		if holds(m.wantsOf(st, t), w) {
			return true
		}
	}
	return false
}

// holds reports whether a asks for everything b asks for.
func holds(a, b wants) bool {
	if b.tools && !a.tools || b.prompts && !a.prompts || b.resources && !a.resources || b.logs && !a.logs {
		return false
	}
	for _, u := range b.uris {
		if _, found := slices.BinarySearch(a.uris, u); !found {
			return false
		}
	}
	return true
}
