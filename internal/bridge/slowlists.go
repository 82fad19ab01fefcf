package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// aggrListWait bounds how long a list of several servers waits for each
// of them. A server slower than that is given as it last listed (left
// out when it never did), but it is not down and not reported missing:
// its list goes on in the background,
// the tools and prompts the host knew of it still route to it, it is left
// out of the lists of that kind without a wait until then (of every kind
// while it never ran), and once its list has come the host is told that
// list changed (and lists again, from what came).
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
	asked   time.Time
	entries []service.ServerList
	err     error
	came    time.Time
	late    bool // guarded by bridge.mu: a list was answered without it
	stale   bool // guarded by bridge.mu: the server's list changed since it was asked
}

func (p *pendingList) finished() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// serverListed is what one server gave a list: its entries or the RPC's
// error, or neither when it was too slow (first: found so by this list).
type serverListed struct {
	server      string
	entries     []service.ServerList
	err         error
	slow, first bool
	// waited is how long its list was in flight when this list went on
	// without it; 0 for a server known slow, not waited for.
	waited time.Duration
	came   time.Time // when its answer came (aggregated)
}

// listServers lists method of the served servers: of the one served
// alone, waiting as long as it takes; of several, all at once
// (listServersOf). It fails only when ctx ends.
func (b *bridge) listServers(ctx context.Context, method string, patient bool) ([]serverListed, error) {
	if !b.aggr {
		entries, err := b.listOne(ctx, method, b.serverNames()[0])
		return []serverListed{{server: b.serverNames()[0], entries: entries, err: err}}, nil
	}
	return b.listServersOf(ctx, method, b.serverNames(), patient)
}

// listServersOf lists method of names all at once, giving each
// aggrListWait at most, and not asking nor waiting for one known slow;
// patient, it waits for every server as long as ctx lasts (a lookup of a
// name no list had yet).
func (b *bridge) listServersOf(ctx context.Context, method string, names []string, patient bool) ([]serverListed, error) {
	out := make([]serverListed, len(names))
	calls := make([]*pendingList, len(names))
	caps := b.listCaps(ctx)
	first := isFirstList(ctx) // waits for the servers still starting, not for failed ones
	for i, n := range names {
		out[i].server = n
		switch {
		case !b.mayOffer(n, method):
			continue // no entries: nothing to ask it
		case !patient && (first && b.startFailed(n) || !first && b.knownSlow(n, method)):
			out[i].slow = true // not waited for again until its list comes
			continue
		}
		calls[i] = b.listAsync(method, n, caps)
	}
	now := time.Now()
	by, started := listsBy(ctx)
	for i, p := range calls {
		if p == nil {
			continue
		}
		until := now.Add(aggrListWait) // a host's list: each server's wait
		if started {
			// The bridge's start: what it asked at once, until its
			// deadline; what it asks later, minListWait at least.
			until = by
			if later := p.asked.Add(minListWait); later.After(by) {
				until = later
			}
		}
		finished, err := waitList(ctx, p, until, patient)
		if err != nil {
			return nil, err
		}
		if !finished {
			b.mu.Lock()
			if !p.finished() { // else it came as the wait ended
				out[i].slow, out[i].first = true, !p.late
				out[i].waited = time.Since(p.asked).Round(time.Second)
				p.late = true
			}
			b.mu.Unlock()
		}
		if !out[i].slow {
			out[i].entries, out[i].err, out[i].came = p.entries, p.err, p.came
		}
	}
	b.keepLast(method, caps, out)
	return out, nil
}

// waitList waits for p until the time until (as long as ctx lasts,
// patient), and reports whether it came; the error is ctx's when it ended.
func waitList(ctx context.Context, p *pendingList, until time.Time, patient bool) (bool, error) {
	var expired <-chan time.Time
	if !patient {
		t := time.NewTimer(time.Until(until))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-p.done:
		return true, nil
	case <-expired:
		return p.finished(), nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// minListWait is the least a list asked during the bridge's start waits
// for a server once the start's deadline has passed.
const minListWait = time.Second

// listsByKey marks a context of the bridge's start with the deadline of
// its lists.
type listsByKey struct{}

func withListsBy(ctx context.Context, t time.Time) context.Context {
	return context.WithValue(ctx, listsByKey{}, t)
}

// listsBy is the deadline withListsBy set, if any.
func listsBy(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(listsByKey{}).(time.Time)
	return t, ok
}

// askTools starts the tools list of every served server (each starting a
// server that is not running): the start's wait for the servers covers
// these lists too, rather than coming after it.
func (b *bridge) askTools() {
	for _, n := range b.serverNames() {
		if !b.knownSlow(n, "tools/list") && b.mayOffer(n, "tools/list") {
			b.listAsync("tools/list", n, b.listCaps(b.work))
		}
	}
}

// keepLast remembers each server's list that came, and gives a server too
// slow for this list the last one it gave: its items stay listed (and
// routed) until its answer comes, rather than vanish at each change.
//
// Lists made for different declarations are kept apart: a server may
// shape its list by the host's clientCapabilities.
func (b *bridge) keepLast(method string, caps json.RawMessage, out []serverListed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i := range out {
		key := pendingKey(method, out[i].server, caps)
		switch {
		case out[i].slow:
			out[i].entries = b.lastListed[key]
		case out[i].err == nil && out[i].entries != nil:
			b.lastListed[key] = out[i].entries
		}
	}
}

// startFailed reports whether server never ran and its start failed after
// a list gave up on it (it is not asked again before it is ready).
func (b *bridge) startFailed(server string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.info[server] == nil && b.stuck[server]
}

// knownSlow reports whether a list of method of server's is still in
// flight after a list was answered without it; of any method while the
// server never ran (it is not ready for any), and then also once such a
// list failed (its start did), until it is ready.
func (b *bridge) knownSlow(server, method string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	undescribed := b.info[server] == nil
	if undescribed && b.stuck[server] {
		return true // until it is ready (missing.go serverState describes it)
	}
	for key, p := range b.pending {
		m, s := splitPendingKey(key)
		if s == server && p.late && !p.finished() && (m == method || undescribed) {
			return true
		}
	}
	return false
}

// mayOffer reports whether server may have items of list method: it is
// not described yet, or its capabilities declare the kind ("Servers that
// support prompts MUST declare the prompts capability").
func (b *bridge) mayOffer(server, method string) bool {
	b.mu.Lock()
	info := b.info[server]
	b.mu.Unlock()
	if info == nil || len(info.Capabilities) == 0 {
		return true
	}
	var caps map[string]json.RawMessage
	if json.Unmarshal(info.Capabilities, &caps) != nil {
		return true
	}
	_, ok := caps[listKind(method)]
	return ok
}

// listKind is the capability of list method: "tools", "prompts" or
// "resources".
func listKind(method string) string {
	if method == "resources/templates/list" {
		return "resources"
	}
	return strings.TrimSuffix(method, "/list")
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
	_, _ = b.listServersOf(ctx, "tools/list", names, false)
}

// listAsync is the list RPC of method to server in flight, started now
// unless one is already, or the result of one that came late. It runs on
// b.work, not on the caller's context (a list cut short would only be
// started again), and when a list was answered without it, the host is
// told that list changed once it comes.
//
// Lists are shared only among hosts that declared alike (caps): a server
// may shape its list by the declaration, and one host's list must not
// reach another.
func (b *bridge) listAsync(method, server string, caps json.RawMessage) *pendingList {
	key := pendingKey(method, server, caps)
	b.mu.Lock()
	defer b.mu.Unlock()
	if p := b.pending[key]; p != nil {
		if !p.finished() {
			return p
		}
		delete(b.pending, key) // came late: taken once
		if time.Since(p.came) < lateKept {
			return p
		}
	}
	p := &pendingList{done: make(chan struct{}), asked: time.Now()}
	b.pending[key] = p
	b.wg.Go(func() {
		p.entries, p.err = b.listOne(withListCaps(b.work, caps), method, server)
		p.came = time.Now()
		b.mu.Lock()
		close(p.done)
		if p.late && p.err != nil && b.info[server] == nil {
			// It never ran, and its start failed after a list gave up on
			// it: it is not asked again before it is ready.
			b.stuck[server] = true
		}
		announce := p.late && p.err == nil
		if !announce || p.stale { // kept only when nothing changed since it was asked
			delete(b.pending, key)
		}
		b.mu.Unlock()
		if announce && b.work.Err() == nil {
			b.opts.Warnf("bridge: server %q answered %s late; telling the host the list changed", server, method)
			// Not news to a host given a result of server's that came
			// after this list was asked: another list of the same server
			// (one made for another declaration, as the start's is)
			// answered meanwhile holds what this one does.
			b.changed(false, listKind(method), server, p.asked)
		}
	})
	return p
}

// listChanged forgets what came late of server's lists of the kind of
// method, and what is in flight of them will not be kept (it may have
// been asked before the change): the server's list changed.
func (b *bridge) listChanged(server, method string) {
	kind := listKind(method)
	b.mu.Lock()
	defer b.mu.Unlock()
	for key, p := range b.pending {
		m, s := splitPendingKey(key)
		if s != server || listKind(m) != kind {
			continue
		}
		p.stale = true
		if p.finished() {
			delete(b.pending, key)
		}
	}
}

// slowMessage tells that server's items of method are left out of a list,
// or given as it last listed them (old).
func slowMessage(method, server string, waited time.Duration, old bool) string {
	kind := strings.TrimSuffix(method, "/list")
	if method == "resources/templates/list" {
		kind = "resource templates"
	}
	how := "are left out of this list"
	if old {
		how = "are listed as it last listed them"
	}
	late := "has not answered " + method + " yet"
	if waited > 0 {
		late = fmt.Sprintf("did not answer %s within %s", method, waited)
	}
	return fmt.Sprintf("server %q %s: its %s %s, and the list is announced as changed once they come",
		server, late, kind, how)
}

// slowNames are the items of list method that the servers in slow had
// in the last list, by name only (nameItems's ghosts).
func (b *bridge) slowNames(method string, slow map[string]bool) []serverItems {
	if len(slow) == 0 || method != "tools/list" && method != "prompts/list" {
		return nil
	}
	kind := strings.TrimSuffix(method, "/list")
	names := map[string][]string{}
	b.mu.Lock()
	for k, r := range b.routes {
		if strings.HasPrefix(k, kind+"\x00") && slow[r.server] {
			names[r.server] = append(names[r.server], r.name)
		}
	}
	b.mu.Unlock()
	var out []serverItems
	for server, ns := range names {
		items := make([]map[string]string, 0, len(ns))
		for _, n := range ns {
			items = append(items, map[string]string{"name": n})
		}
		raw, _ := json.Marshal(items)
		out = append(out, serverItems{server: server, items: raw})
	}
	return out
}

// setRoutes replaces the routes of a tools or prompts list's kind, but
// for the servers in kept (too slow for this list), whose routes stay. A
// list that kept none is remembered, made of got under mode, as the last
// of its method (listmemo.go).
func (b *bridge) setRoutes(l *listing, kept map[string]bool, got []serverItems, mode profile.Prefix) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(kept) == 0 {
		b.rememberLocked(l, got, mode)
	} else {
		delete(b.lists, l.method)
	}
	if l.method != "tools/list" && l.method != "prompts/list" {
		maps.Copy(b.uris, l.uris)
		return
	}
	kind := strings.TrimSuffix(l.method, "/list")
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
		// A tool's UI resource reads from the tool's server, whether or
		// not that server lists the resource (a resource listed keeps its
		// lister).
		for uri, server := range l.uiURIs {
			if _, listed := b.uris[uri]; !listed {
				b.uris[uri] = server
			}
		}
	}
}

// pendingKey is the key of a list in bridge.pending and bridge.lastListed:
// the method, the server and the scope of the declaration it is made for.
func pendingKey(method, server string, caps json.RawMessage) string {
	return method + "\x00" + server + "\x00" + jsonrpc.CapsDigest(caps)
}

// splitPendingKey is the method and server of a pendingKey.
func splitPendingKey(key string) (method, server string) {
	method, rest, _ := strings.Cut(key, "\x00")
	server, _, _ = strings.Cut(rest, "\x00")
	return method, server
}
