package subscriptions

import (
	"encoding/json"
	"sync"
	"time"
)

// dupWindow is how long a notification that arrives on an older listen after
// a newer one took over is held back, waiting for its twin on the newer
// listen, before it is delivered anyway.
const dupWindow = 250 * time.Millisecond

// cutover decides which of the notifications arriving on the listens of one
// child reach the apps while a listen switch overlaps two listens (the
// current one and the one it replaced, which applyModern leaves open until
// the next switch).
//
// The acknowledgement of a newer listen makes it current. From then on:
//
//   - every notification of the current listen is delivered;
//   - a notification of an older listen is dropped if the current listen
//     already delivered one with the same identity (method and URI) since
//     its acknowledgement: either it is that one's twin, or it is about a
//     change that happened before the current listen was registered, which
//     the later notification covers;
//   - otherwise it is held for dupWindow: its twin on the current listen
//     drops it, else it is delivered. The server may legitimately send it
//     without a twin ("on stdio the ordering is per subscription id only"):
//     a change it fanned out to the listens it had just before it
//     registered the new one can reach mcpd after the new acknowledgement.
//     (Servers like the Go SDK deliver each change on one listen only;
//     servers like fakemcp on every matching listen.)
//
// So no notification a server delivered on any of mcpd's listens is lost,
// and a change delivered on two listens reaches the apps once. Its methods
// are called on the child's reader goroutine (take) and by the upstream loop.
type cutover struct {
	mu   sync.Mutex // guards the fields below
	cur  uint64     // generation of the current listen (0: none yet)
	seen map[string]bool
	held []heldCopy
}

// heldCopy is one notification waiting for its twin.
type heldCopy struct {
	gen    uint64
	ident  string
	method string
	params json.RawMessage
	at     time.Time
}

// noticeIdentity is what makes two notifications copies of the same news: the
// method and, for resources/updated, the URI.
func noticeIdentity(method string, params json.RawMessage) string {
	if method != "notifications/resources/updated" {
		return method
	}
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(params, &p)
	return method + "\x00" + p.URI
}

// take classifies one message of listen gen (params already without mcpd's
// subscription id) and returns what to deliver now, in order, and whether
// something is now held.
func (c *cutover) take(gen uint64, method string, params json.RawMessage, now time.Time) (out []heldCopy, held bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if method == "notifications/subscriptions/acknowledged" {
		if gen <= c.cur {
			return nil, len(c.held) > 0
		}
		c.cur, c.seen = gen, map[string]bool{}
		// Notifications of this listen that arrived before its
		// acknowledgement (a server breaking the ordering rule) are its own.
		kept := c.held[:0]
		for _, h := range c.held {
			if h.gen == gen {
				out = append(out, h)
				c.seen[h.ident] = true
			} else {
				kept = append(kept, h)
			}
		}
		clear(c.held[len(kept):])
		c.held = kept
		return out, len(c.held) > 0
	}
	n := heldCopy{gen: gen, ident: noticeIdentity(method, params), method: method, params: params, at: now}
	switch {
	case gen == c.cur:
		kept := c.held[:0]
		for _, h := range c.held {
			if h.gen > gen || h.ident != n.ident {
				kept = append(kept, h)
			}
		}
		clear(c.held[len(kept):])
		c.held = kept
		c.seen[n.ident] = true
		return []heldCopy{n}, len(c.held) > 0
	case gen < c.cur && c.seen[n.ident]:
		return nil, len(c.held) > 0
	default:
		c.held = append(c.held, n)
		return nil, true
	}
}

// release returns the held notifications that waited dupWindow (every one
// when all is set), one per identity, and whether any is still held.
func (c *cutover) release(now time.Time, all bool) ([]heldCopy, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []heldCopy
	kept := c.held[:0]
	for _, h := range c.held {
		if all || now.Sub(h.at) >= dupWindow {
			out = append(out, h)
		} else {
			kept = append(kept, h)
		}
	}
	clear(c.held[len(kept):])
	c.held = kept
	// One notice per identity covers every earlier change of it: keep the
	// last of each.
	last := map[string]int{}
	for i, h := range out {
		last[h.ident] = i
	}
	dedup := out[:0]
	for i, h := range out {
		if last[h.ident] == i {
			dedup = append(dedup, h)
		}
	}
	return dedup, len(c.held) > 0
}

// reset forgets every listen (they were closed, or the child is gone).
func (c *cutover) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cur, c.seen, c.held = 0, nil, nil
}
