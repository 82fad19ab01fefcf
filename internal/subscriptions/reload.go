package subscriptions

import (
	"fmt"
	"time"

	"go.uber.org/zap"
)

// States of KindState events that come from a config reload rather than
// from a child's lifecycle. Unlike the lifecycle states they reach every
// stream that watches the server, whether or not it asked for state
// events: they change what the stream covers.
const (
	// StateAdded: a reload added the server; streams watching every
	// server now watch it too (its upstream subscription is being opened).
	StateAdded = "added"
	// StateRemoved: a reload removed the server; Error says so. A stream
	// that named it no longer watches it; one that named nothing else ends
	// with an error event.
	StateRemoved = "removed"
)

// ServerAdded tells the manager that a config reload added server: the
// streams watching every server get a StateAdded event, and the server's
// upstream subscription is opened for them (starting the child, as
// Subscribe does). It never blocks on the child.
func (m *Manager) ServerAdded(server string) {
	m.publish(Event{Kind: KindState, Server: server, State: StateAdded, Time: time.Now()})
	ts := m.targetsOf(server) // instances.go
	if len(ts) == 0 {
		return
	}
	for _, t := range ts {
		m.bump(t)
	}
	m.log.Info("server added to watching streams", zap.String("server", server))
}

// ServerRemoved tells the manager that a config reload removed server:
// every stream watching it gets a StateRemoved event with reason; streams
// that named it stop watching it and keep their other servers (a stream
// left with no server ends with an error event naming the server); the
// server's upstream aggregator is retired (its listens are cancelled;
// the supervisor stops the child).
func (m *Manager) ServerRemoved(server, reason string) {
	if reason == "" {
		reason = fmt.Sprintf("server %q was removed from the config", server)
	}
	m.publish(Event{Kind: KindState, Server: server, State: StateRemoved, Error: reason, Time: time.Now()})

	m.mu.Lock()
	var ups []*upstream
	for t, u := range m.upstreams {
		if t.Server == server {
			ups = append(ups, u)
			delete(m.upstreams, t)
		}
	}
	streams := make([]*Stream, 0, len(m.streams))
	for _, st := range m.streams {
		streams = append(streams, st)
	}
	m.mu.Unlock()

	var orphans []*Stream
	for _, st := range streams {
		st.mu.Lock()
		named := st.servers != nil && st.servers[server]
		if named {
			delete(st.servers, server)
			delete(st.uris, server)
			st.changedLocked(server)
		}
		empty := named && len(st.servers) == 0
		st.mu.Unlock()
		if named {
			m.recount(st) // interest.go
		}
		if empty {
			orphans = append(orphans, st)
		}
	}
	for _, st := range orphans {
		st.fail(server, fmt.Sprintf("subscription ended: %s and it watched no other server", reason))
	}
	for _, u := range ups {
		u.retire(reason)
	}
	m.log.Info("server removed from watching streams", zap.String("server", server), zap.Int("streams_ended", len(orphans)))
}

// ServerChanged wakes the upstream of server after a reload changed its
// config (enabled again, new command): if it was waiting for the server to
// become available, it tries again now.
func (m *Manager) ServerChanged(server string) {
	ups := m.upstreamsOf(server) // instances.go
	for _, u := range ups {
		u.nudge()
	}
	if len(ups) > 0 {
		return
	}
	// Streams watching every server may want a server the config has just
	// enabled.
	for _, t := range m.targetsOf(server) {
		m.bump(t)
	}
}

// ProfileListsChanged tells the streams opened under profile that watch
// server's list changes that a config reload changed which of its tools,
// prompts or resources the profile shows (or how): each gets a synthetic
// list-changed event of the kinds that changed, as if the server had sent
// it, and an app re-lists. Other streams get nothing: for them nothing
// changed. It never blocks.
func (m *Manager) ProfileListsChanged(profile, server string, tools, prompts, resources bool) {
	now := time.Now()
	for _, c := range []struct {
		changed bool
		kind    Kind
	}{{tools, KindToolsListChanged}, {prompts, KindPromptsListChanged}, {resources, KindResourcesListChanged}} {
		if c.changed {
			m.publish(Event{Kind: c.kind, Server: server, Synthetic: true, Time: now, profile: profile})
		}
	}
}

// retire stops the upstream's loop for good: its listens are cancelled,
// and Subscribe/Update calls waiting for its acknowledgement get an error
// with reason.
func (u *upstream) retire(reason string) {
	u.mu.Lock()
	u.gone = reason
	u.mu.Unlock()
	if u.stop != nil {
		u.stop()
	}
}
