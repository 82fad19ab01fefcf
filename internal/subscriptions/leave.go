package subscriptions

import "slices"

// This file releases the upstream interest of a stream that ends (closed,
// or lagged). When an app leaves and another stream still wants all it
// wanted, which is the common case, the union cannot change and no
// reconcile is asked for. The counts (interest.go) say so at once; while
// servers run instances, it is found by reading the other open streams.

// left is what a stream wanted upstream when it ended (Stream.end).
type left struct {
	ended   bool            // it had ended before: it wanted nothing
	servers map[string]bool // nil: every server
	flags   wants           // its kinds (no URIs)
	uris    map[string][]string
}

// of is what the stream wanted from server (from any of its instances).
func (l left) of(server string) wants {
	if l.ended || l.servers != nil && !l.servers[server] {
		return wants{}
	}
	w := l.flags
	w.uris = l.uris[server]
	return w
}

// release records, after st ended, a change of interest on the upstreams
// whose union its leaving may shrink: those of the instances it reached
// and wanted something from that no other stream still wants as well.
func (m *Manager) release(st *Stream, l left) {
	changed, all := m.recount(st) // interest.go
	if !m.routed() {
		// The counts said which unions shrank.
		var ups []*upstream
		m.mu.RLock()
		if all {
			for t, u := range m.upstreams {
				if t.Instance == "" {
					ups = append(ups, u)
				}
			}
		} else {
			for _, server := range changed {
				if u := m.upstreams[Target{Server: server}]; u != nil {
					ups = append(ups, u)
				}
			}
		}
		m.mu.RUnlock()
		for _, u := range ups {
			u.changed()
		}
		return
	}
	m.mu.RLock()
	var ups []*upstream
	for t, u := range m.upstreams {
		w := l.of(t.Server)
		if !w.any() {
			continue
		}
		if key, err := m.route(st, t.Server); err != nil || key != t.Instance {
			continue
		}
		if !m.wantedByOthersLocked(t, w) {
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

// holds reports whether a asks for everything b asks for (URIs sorted).
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
