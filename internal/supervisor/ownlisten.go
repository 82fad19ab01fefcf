package supervisor

import (
	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

// This file lets the subscription manager keep mcpd's own upstream listen
// (subscriptions.Options.CacheListens, unless Options.NoCacheListens): for
// every ready modern child, a listen for the list kinds it advertises as
// listChanged, whose acknowledgement becomes cache promises
// (SetCachePromises), so a modern server answering ttlMs 0 is asked for its
// lists once, not once per app. The listen uses the child that is ready and
// never starts one: it is not demand (no restart, no idle-timeout reset),
// and status does not list it as an app.

// Ready returns the ready child of server without starting it and without
// counting as demand (subscriptions.ReadySource); nil when none is ready or
// when the server's cache is off ("never": nothing to promise to).
func (src subsSource) Ready(name string) subscriptions.Child {
	sv, err := src.s.lookup(name)
	if err != nil || src.s.shuttingDown() {
		return nil
	}
	sv.mu.Lock()
	policy := sv.spec.Cache // a reload may change it
	sv.mu.Unlock()
	if p, _ := cache.ParsePolicy(policy); p.Mode == cache.ModeNever {
		return nil
	}
	c := sv.ready.Load()
	if c == nil {
		return nil
	}
	return &subsChild{sv: sv, c: c}
}
