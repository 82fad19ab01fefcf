package subscriptions

import (
	"context"
	"encoding/json"
	"time"
)

// This file is mcpd's own subscriber (Options.CacheListens): for every
// ready modern child, the list kinds its capabilities advertise as
// listChanged stay in the upstream listen, whether or not an app watches
// them, so that the acknowledged listen becomes cache promises ("a modern
// listen that mcpd keeps open for the kinds it caches and the server
// acknowledged") and tools/list with ttlMs 0 is asked once, not once per app.
//
// It is not an app: it has no stream (status does not list it), and it is
// not demand. It never starts a child: it uses the child the supervisor has
// ready (ReadySource) and waits for the next lifecycle event when there is
// none, so an idle server may still stop and the crash-loop rules are
// unchanged. Like any subscription it is re-sent to a restarted child, when
// that child becomes ready.

// ReadySource is implemented by a Source that can return the ready child of
// a server without starting it and without counting as demand.
// Options.CacheListens needs it.
type ReadySource interface {
	// Ready returns the ready child of server, or nil.
	Ready(server string) Child
}

// ownWants is what mcpd's own subscriber wants from a child with caps: the
// list kinds it may cache and the child promises to announce.
func ownWants(caps json.RawMessage) wants {
	var c capabilities
	if json.Unmarshal(caps, &c) != nil {
		return wants{}
	}
	return wants{
		tools:     c.Tools != nil && c.Tools.ListChanged,
		prompts:   c.Prompts != nil && c.Prompts.ListChanged,
		resources: c.Resources != nil && c.Resources.ListChanged,
	}
}

// withOwn adds mcpd's own list kinds to want when the current child is
// modern.
func (u *upstream) withOwn(want wants) wants {
	if !u.m.opts.CacheListens || u.child == nil || !u.child.Modern() {
		return want
	}
	own := ownWants(u.child.Capabilities())
	want.tools = want.tools || own.tools
	want.prompts = want.prompts || own.prompts
	want.resources = want.resources || own.resources
	return want
}

// reconcileOwn keeps mcpd's own listen on the ready child when no app wants
// anything from the server, and returns its acknowledgement. It reports
// false when there is nothing to keep (own listens off, no ready child, a
// legacy child, no listChanged kinds): the caller then releases everything.
func (u *upstream) reconcileOwn(ctx context.Context) (ServerAck, bool) {
	if !u.m.opts.CacheListens || u.inst != "" {
		return ServerAck{}, false
	}
	rs, ok := u.m.opts.Source.(ReadySource)
	if !ok {
		return ServerAck{}, false
	}
	if u.child == nil {
		c := rs.Ready(u.name)
		if c == nil {
			return ServerAck{}, false // the next lifecycle event (ready) wakes the loop
		}
		select {
		case <-c.Done():
			return ServerAck{}, false
		default:
		}
		u.child, u.subscribedURIs = c, nil
		u.retryAt = time.Time{}
	}
	if !u.child.Modern() {
		return ServerAck{}, false
	}
	own := u.withOwn(wants{})
	if !own.any() {
		return ServerAck{}, false
	}
	// Legacy URIs cannot be left over: the child is modern. No app
	// subscription is established, so a new child is not a restart for
	// the apps that subscribe later.
	u.established = false
	a := u.applyModern(ctx, own)
	u.promise(a)
	return a, true
}

// stateUpstream is the upstream to wake for a lifecycle event: with own
// listens, a server that became ready gets one even if no app watches it.
func (m *Manager) stateUpstream(se StateEvent) *upstream {
	t := Target{se.Server, se.Instance}
	if m.opts.CacheListens && se.State == "ready" && se.Instance == "" {
		// (An instance's upstream lives while streams are routed to it.)
		return m.upstream(t)
	}
	return m.existing(t)
}
