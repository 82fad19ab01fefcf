package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// aggrListWait bounds how long a list of several servers waits for each
// of them. A server slower than that is left out of that list, but it is
// not down and not reported missing: its list goes on in the background,
// the tools and prompts the host knew of it still route to it, it is left
// out of every list without a wait until then, and once its list has come
// the host is told the lists changed (and lists again, from mcpd's cache).
const aggrListWait = 5 * time.Second

// lateKept is how long the result of a list that came late is kept for
// the host's next list (the one the change announcement asks for).
const lateKept = 30 * time.Second

// pendingList is one server's list RPC in flight, shared by the host's
// lists that wait for it. One that came late stays in bridge.pending until
// the next list takes it: a server that lists slower than aggrListWait
// each time (a modern one whose ttlMs 0 mcpd cannot cache) is then in the
// list the host makes when told of the change.
type pendingList struct {
	done    chan struct{} // closed once entries, err and came are set
	entries []*mcpdv1.ServerList
	err     error
	came    time.Time
	late    bool // guarded by bridge.mu: a list was answered without it
}

// serverListed is what one server gave a list: its entries or the RPC's
// error, or neither when it was too slow.
type serverListed struct {
	server  string
	entries []*mcpdv1.ServerList
	err     error
	slow    bool
}

// listServers lists method of the served servers: of the one served
// alone, waiting as long as it takes; of several, all at once
// (listServersOf). It fails only when ctx ends.
func (b *bridge) listServers(ctx context.Context, method string) ([]serverListed, error) {
	if !b.aggr {
		entries, err := b.listOne(ctx, method, b.names[0])
		return []serverListed{{server: b.names[0], entries: entries, err: err}}, nil
	}
	return b.listServersOf(ctx, method, b.names)
}

// listServersOf lists method of names all at once, giving each
// aggrListWait at most; a server known slow is not asked, nor waited for.
func (b *bridge) listServersOf(ctx context.Context, method string, names []string) ([]serverListed, error) {
	out := make([]serverListed, len(names))
	calls := make([]*pendingList, len(names))
	for i, n := range names {
		out[i].server = n
		if !b.mayOffer(n, method) {
			continue // no entries: nothing to ask it
		}
		if b.knownSlow(n) {
			out[i].slow = true // not waited for again until its list comes
			continue
		}
		calls[i] = b.listAsync(ctx, method, n)
	}
	wait, cancel := context.WithTimeout(ctx, aggrListWait)
	defer cancel()
	for i, p := range calls {
		if p == nil {
			continue
		}
		select {
		case <-p.done:
		case <-wait.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			b.mu.Lock()
			select {
			case <-p.done: // came as the wait ended
			default:
				p.late = true
				out[i].slow = true
			}
			b.mu.Unlock()
		}
		if !out[i].slow {
			out[i].entries, out[i].err = p.entries, p.err
		}
	}
	return out, nil
}

// knownSlow reports whether a list of server's was already answered
// without it, and is still in flight.
func (b *bridge) knownSlow(server string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for key, p := range b.pending {
		if p.late && strings.HasSuffix(key, "\x00"+server) {
			select {
			case <-p.done:
			default:
				return true
			}
		}
	}
	return false
}

// mayOffer reports whether server may have items of list method: it is
// not described yet, or its capabilities declare the kind ("Servers that
// support prompts MUST declare the prompts capability").
func (b *bridge) mayOffer(server, method string) bool {
	kind := strings.TrimSuffix(method, "/list")
	if method == "resources/templates/list" {
		kind = "resources"
	}
	b.mu.Lock()
	info := b.info[server]
	b.mu.Unlock()
	if info == nil || info.GetCapabilitiesJson() == "" {
		return true
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal([]byte(info.GetCapabilitiesJson()), &caps) != nil {
		return true
	}
	_, ok := caps[kind]
	return ok
}

// startServers starts the servers that have not run yet by listing their
// tools (a list starts a server lazily; an operator's explicit stop is
// respected), all at once, waiting aggrListWait at most when serving
// several: one that is slower is known slow (knownSlow) from then on.
func (b *bridge) startServers(ctx context.Context, names []string) {
	if !b.aggr {
		_, _ = b.listOne(ctx, "tools/list", names[0])
		return
	}
	_, _ = b.listServersOf(ctx, "tools/list", names)
}

// listAsync is the list RPC of method to server in flight, started now
// unless one is already. It runs on the bridge's life, not on ctx's (a
// list cut short would only be started again), and when a list was
// answered without it, the host is told that list changed once it comes.
func (b *bridge) listAsync(ctx context.Context, method, server string) *pendingList {
	key := method + "\x00" + server
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pending[key]; p != nil {
		select {
		case <-p.done: // came late: taken once
			delete(b.pending, key)
			if time.Since(p.came) < lateKept {
				return p
			}
		default:
			return p
		}
	}
	p := &pendingList{done: make(chan struct{})}
	b.pending[key] = p
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(b.ctx, cancel)
	b.wg.Go(func() {
		defer cancel()
		defer stop()
		p.entries, p.err = b.listOne(lctx, method, server)
		p.came = time.Now()
		b.mu.Lock()
		close(p.done)
		late := p.late
		if !late || p.err != nil {
			delete(b.pending, key)
		}
		b.mu.Unlock()
		if late && p.err == nil && b.ctx.Err() == nil {
			b.opts.Warnf("bridge: server %q answered %s late; the host is told the lists changed", server, method)
			b.announceLists(false) // a slow server left out of every kind of list meanwhile
		}
	})
	return p
}

// slowMessage tells that server's items of method are left out of a list.
func slowMessage(method, server string) string {
	kind := strings.TrimSuffix(method, "/list")
	if method == "resources/templates/list" {
		kind = "resource templates"
	}
	return fmt.Sprintf("server %q did not answer %s within %s: its %s are left out of this list, and the list is announced as changed once they come",
		server, method, aggrListWait, kind)
}

// setRoutes replaces the routes of a tools or prompts list's kind, but
// for the servers in kept (too slow for this list), whose routes stay.
func (b *bridge) setRoutes(l *listing, kept map[string]bool) {
	if l.method != "tools/list" && l.method != "prompts/list" {
		b.mu.Lock()
		maps.Copy(b.uris, l.uris)
		b.mu.Unlock()
		return
	}
	kind := strings.TrimSuffix(l.method, "/list")
	b.mu.Lock()
	defer b.mu.Unlock()
	params := l.params
	for k, r := range b.routes {
		exposed, ok := strings.CutPrefix(k, kind+"\x00")
		if !ok {
			continue
		}
		if _, listed := l.routes[exposed]; kept[r.server] && !listed {
			if hs := b.toolParams[exposed]; kind == "tools" && hs != nil {
				params[exposed] = hs
			}
			continue
		}
		delete(b.routes, k)
	}
	for k, r := range l.routes {
		b.routes[kind+"\x00"+k] = r
	}
	if kind == "tools" {
		b.toolParams = params
		b.toolsListed = true
	}
}
