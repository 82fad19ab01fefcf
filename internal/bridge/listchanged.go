package bridge

import (
	"context"
	"time"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// Timing of an aggregate's lists for its host. The host's first list of
// each kind waits, up to firstListWait from the bridge's start, for every
// server that is starting (not one that failed, nor one mcpd reports
// down): a host connecting as mcpd starts its lazy servers sees them all
// at once. A server slower than that comes in later with a list_changed.
// List changes are told at most once per kind per listChangedWindow: a
// burst from several servers (starting, restarting, a reload) is one
// notification.
const (
	firstListWait     = 10 * time.Second
	listChangedWindow = 200 * time.Millisecond
)

// changeState is what an aggregate has yet to tell its host of its list
// changes; guarded by bridge.mu.
type changeState struct {
	kinds map[string][]listChange // by kind ("tools", …): changes not told yet
	all   bool                    // a legacy host is told of every kind (announceLists(true))
	armed bool                    // a flush is scheduled
	// first: the list methods whose first host list was begun.
	first map[string]bool
	// listed: list method → server → when the result the legacy host was
	// last given of it came (its list already holds changes before that).
	listed map[string]map[string]time.Time
}

// listChange is one server's list change ("" for one of no server in
// particular) and when it happened.
type listChange struct {
	server string
	at     time.Time
}

func newChangeState() changeState {
	return changeState{kinds: map[string][]listChange{}, first: map[string]bool{}, listed: map[string]map[string]time.Time{}}
}

// firstListKey marks the context of a host's first list of its kind.
type firstListKey struct{}

// firstList returns ctx for the host's list of method: the first one of
// its kind, while firstListWait from the bridge's start has not passed,
// waits for the servers still starting until then.
func (b *bridge) firstList(ctx context.Context, method string) context.Context {
	if _, setup := listsBy(ctx); setup || !b.aggr {
		return ctx
	}
	deadline := b.born.Add(firstListWait)
	b.mu.Lock()
	first := !b.changes.first[method]
	b.changes.first[method] = true
	b.mu.Unlock()
	if !first || !time.Now().Before(deadline) {
		return ctx
	}
	return context.WithValue(withListsBy(ctx, deadline), firstListKey{}, true)
}

// isFirstList reports whether ctx is a host's first list (firstList).
func isFirstList(ctx context.Context) bool {
	first, _ := ctx.Value(firstListKey{}).(bool)
	return first
}

// noteListed records, for a legacy host, when the results its list of
// method holds came: a change of those servers before that is in it.
func (b *bridge) noteListed(method string, listed []serverListed) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.changes.listed[method]
	if m == nil {
		m = map[string]time.Time{}
		b.changes.listed[method] = m
	}
	for _, sl := range listed {
		if !sl.slow && sl.err == nil && !sl.came.IsZero() {
			m[sl.server] = sl.came
		}
	}
	if b.armLocked() { // changes held while the first list was made
		b.wg.Go(b.flushChangesSoon)
	}
}

// changed notes that server's lists of kind (every kind when "") changed
// at the time at; an aggregate tells its host once listChangedWindow has
// passed, a bridge of one server at once.
func (b *bridge) changed(all bool, kind, server string, at time.Time) {
	kinds := []string{kind}
	if kind == "" {
		kinds = []string{"tools", "prompts", "resources"}
	}
	if !b.aggr {
		now := map[string]bool{}
		for _, k := range kinds {
			now[k] = true
		}
		b.announceNow(all, now, now)
		return
	}
	b.mu.Lock()
	for _, k := range kinds {
		b.changes.kinds[k] = append(b.changes.kinds[k], listChange{server: server, at: at})
	}
	b.changes.all = b.changes.all || all
	arm := b.armLocked()
	b.mu.Unlock()
	if arm {
		b.wg.Go(b.flushChangesSoon)
	}
}

// armLocked reports whether a flush of the pending changes is to be
// scheduled now (and records that it is).
func (b *bridge) armLocked() bool {
	if b.changes.armed || len(b.changes.kinds) == 0 || b.ctx.Err() != nil {
		return false
	}
	b.changes.armed = true
	return true
}

// flushChangesSoon tells the host of the changes noted within
// listChangedWindow, unless the bridge ends first.
func (b *bridge) flushChangesSoon() {
	t := time.NewTimer(listChangedWindow)
	defer t.Stop()
	select {
	case <-b.ctx.Done():
		return
	case <-t.C:
	}
	b.mu.Lock()
	legacy, listens, held := map[string]bool{}, map[string]bool{}, map[string][]listChange{}
	for k, cs := range b.changes.kinds {
		if b.listingFirstLocked(k) {
			held[k] = cs // told, if still news, once that list is given
			continue
		}
		listens[k] = true
		for _, c := range cs {
			legacy[k] = legacy[k] || !b.knewLocked(k, c)
		}
	}
	all := b.changes.all && len(held) == 0
	b.changes.kinds, b.changes.all, b.changes.armed = held, b.changes.all && !all, false
	b.mu.Unlock()
	if len(listens) > 0 || all {
		b.announceNow(all, legacy, listens)
	}
}

// listingFirstLocked reports whether the host's first list of kind is
// being made: changes until it is given are held, most of them are in it.
func (b *bridge) listingFirstLocked(kind string) bool {
	method := kind + "/list"
	return b.changes.first[method] && b.changes.listed[method] == nil
}

// knewLocked reports whether the legacy host's lists of kind already hold
// change c: it is one server's, of tools or prompts, and the host either
// never listed that kind (it has nothing stale) or was last given a
// result of that server that came after it.
func (b *bridge) knewLocked(kind string, c listChange) bool {
	if c.server == "" || kind == "resources" {
		return false
	}
	m := b.changes.listed[kind+"/list"]
	if m == nil {
		return true
	}
	came, ok := m[c.server]
	return ok && !came.Before(c.at)
}

// eventTime is when mcpd heard of ev, on the bridge's clock: the event's
// own time, rounded up to the millisecond, when mcpd runs in this process
// (a list that came after it holds the change, however long the event took
// to arrive: a subscription opening while servers start delivers its
// events late), else the time it arrived.
func (b *bridge) eventTime(ev *service.SubscriptionEvent) time.Time {
	now := time.Now()
	ms := ev.Time.UnixMilli()
	if !b.opts.LocalClock || ev.Time.IsZero() || ms <= 0 {
		return now
	}
	if at := time.UnixMilli(ms + 1); at.Before(now) {
		return at
	}
	return now
}
