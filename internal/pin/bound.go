package pin

import (
	"cmp"
	"slices"
)

// Every distinct declaration a host sends a 2026-07-28 server is a
// variant of its tools (variant.go). So that hosts declaring ever new
// capabilities cannot grow the pins without end, a server keeps at most
// MaxVariants declaration variants, in memory and in its pins file (the
// shared variant is not counted). A new variant past the bound drops the
// least recently used one that has no pending change: a variant whose list
// differs from its pins is never dropped, so that dropping it cannot pin
// the changed list as new. When every other variant has a pending change,
// the bound is exceeded until they are approved or listed unchanged. A
// variant in the file but not used since mcpd started counts as less
// recently used than any in memory. A dropped variant that comes back is
// pinned again on its first use.

// MaxVariants is the most declaration variants kept per server.
const MaxVariants = 16

// bound drops server's least recently used variants without a pending
// change past b.maxVariants, from memory and then from the file; variant
// added, just made, stays. Neither b.mu nor any variant's locks may be held.
func (b *Book) bound(name, added string) {
	type seen = seenVariant
	prefix := variantKey(name, "")
	b.mu.Lock()
	var all []seen
	for k, sp := range b.servers {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			all = append(all, seen{k, sp, sp.used})
		}
	}
	b.mu.Unlock()
	if len(all) <= b.maxVariants {
		b.trimFile(name, all, added)
		return
	}
	var droppable []seen
	for _, s := range all {
		s.sp.mu.Lock()
		pending := len(s.sp.changes) > 0
		s.sp.mu.Unlock()
		if !pending && s.sp.variant.Key != added {
			droppable = append(droppable, s)
		}
	}
	slices.SortFunc(droppable, func(x, y seen) int { return cmp.Compare(x.used, y.used) })
	over := len(all) - b.maxVariants
	b.mu.Lock()
	for _, s := range droppable {
		if over == 0 {
			break
		}
		// Not used since it was looked at: a variant in use stays.
		if b.servers[s.key] == s.sp && s.sp.used == s.used {
			delete(b.servers, s.key)
			over--
		}
	}
	var kept []seen
	for k, sp := range b.servers {
		if len(k) > len(prefix) && k[:len(prefix)] == prefix {
			kept = append(kept, seen{k, sp, sp.used})
		}
	}
	b.mu.Unlock()
	b.trimFile(name, kept, added)
}

// trimFile drops from server's file the variants not among kept, when it
// holds more than b.maxVariants counting added. A failure to write is left for the next
// new variant: the pins themselves are intact.
func (b *Book) trimFile(name string, kept []seenVariant, added string) {
	keep := make(map[string]bool, len(kept))
	for _, s := range kept {
		keep[s.sp.variant.Key] = true
	}
	_ = b.store.TrimVariants(name, b.maxVariants, keep, added)
}

// seenVariant is a variant of a server and its use when looked at.
type seenVariant struct {
	key  string // in Book.servers
	sp   *serverPins
	used uint64
}
