package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// subState is the host's subscriptions and the bridge's one Subscribe
// stream to mcpd that carries them. Guarded by bridge.mu.
type subState struct {
	refs    map[string]int        // resource URI → legacy subscribe (1) + listens naming it
	legacy  map[string]bool       // URIs of resources/subscribe
	listens map[string]*listenSub // open subscriptions/listen by request id
	id      uint64                // the open Subscribe stream, 0 when none
	sent    map[string]bool       // URIs that stream watches
	open    chan struct{}         // closed while a stream is open
	end     context.CancelFunc    // ends the open stream (to reopen it for other servers); nil when none
	next    *openedStream         // opened for new servers, to be taken over by the loop (reopenFor); nil when none
	// refused are URIs mcpd refused as not found (the profile hides them
	// on every server): not sent again, and not in a reopen, where they
	// would have the whole stream refused; forgotten when the profile may
	// have changed (reprofile). bare makes the next Subscribe carry
	// no URI, after one was refused as not found: syncOnce then adds them
	// and learns which are refused.
	refused map[string]bool
	bare    bool

	// URI syncs (syncURIs): callers ask for one; one goroutine at a time,
	// the syncer, sends them in order, so no caller holds a lock across
	// UpdateSubscription and the stream's reader never waits for one.
	syncAsked uint64        // syncs asked for
	syncDone  uint64        // the syncs asked for up to here are done
	syncDoneC chan struct{} // closed (and replaced) when syncDone moves
	syncing   bool          // the syncer runs
}

func newSubState() subState {
	return subState{
		refs:      map[string]int{},
		legacy:    map[string]bool{},
		listens:   map[string]*listenSub{},
		sent:      map[string]bool{},
		open:      make(chan struct{}),
		syncDoneC: make(chan struct{}),
	}
}

// subscribeLoop keeps one Subscribe stream to mcpd open for the served
// servers, resubscribing (with the host's resource URIs) whenever it ends:
// "When mcpd is down or restarts ... reconnect when mcpd is back,
// re-establish the host's subscriptions".
func (b *bridge) subscribeLoop(ctx context.Context) {
	first := true
	keepOpen(ctx, func() bool {
		if !b.subscribeOnce(ctx, first) {
			return false
		}
		first = false
		return true
	})
}

// openedStream is a Subscribe stream to mcpd that was acknowledged, and
// what it asked for.
type openedStream struct {
	stream *watchStream
	ack    service.SubscriptionEvent
	cancel context.CancelFunc // ends it
	names  []string           // the servers it watches
	uris   []string           // the resource URIs it watches
}

// subscribeOnce runs one Subscribe stream; it reports whether it was
// acknowledged. A stream opened for the profile's new servers while the
// last one still delivered (reopenFor) is taken over as it is.
func (b *bridge) subscribeOnce(ctx context.Context, first bool) bool {
	b.mu.Lock()
	next := b.subs.next
	b.subs.next = nil
	b.mu.Unlock()
	if next != nil {
		return b.runStream(ctx, next, false)
	}
	if b.ready(ctx) != nil {
		return false
	}
	o, ok := b.openStream(ctx)
	if !ok {
		return false
	}
	return b.runStream(ctx, o, !first)
}

// openStream opens a Subscribe stream for the served servers and the
// host's resource URIs, and waits for its acknowledgement.
func (b *bridge) openStream(ctx context.Context) (*openedStream, bool) {
	sctx, cancel := context.WithCancel(ctx)
	b.mu.Lock()
	var uris []string
	if !b.subs.bare {
		for u, n := range b.subs.refs {
			if n > 0 && !b.subs.refused[u] {
				uris = append(uris, u)
			}
		}
	}
	var client service.Client
	if c := b.clientOf(b.hostInfo); c != nil {
		client = *c
	}
	b.mu.Unlock()
	slices.Sort(uris)
	names := b.serverNames()
	stream := b.watch(sctx, service.Watch{
		Servers:              names,
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true,
		URIs:                 uris,
		Logs:                 true, // forwarded once a legacy host set a level
		State:                true, // servers going down and coming back (missing.go)
		TaskStatus:           true, // of the host's tasks (taskstatus.go)
		Client:               client,
	})
	ack, err := stream.Recv()
	if err != nil || ack.Ack == nil {
		cancel()
		if service.CodeOf(err) == service.NotFound {
			// A server or profile of the bridge's is gone (a reload, or mcpd
			// restarted with another config): a bridge of a whole profile
			// learns its servers again before the next try. Or the profile
			// hides a URI: the next try carries none, and syncOnce learns
			// which.
			b.refreshProfileSoon()
			if len(uris) > 0 {
				b.mu.Lock()
				b.subs.bare = true
				b.mu.Unlock()
			}
		}
		return nil, false
	}
	return &openedStream{stream: stream, ack: ack, cancel: cancel, names: names, uris: uris}, true
}

// runStream reads the acknowledged stream o until it ends; cameBack says
// mcpd came back (the host is told its lists may have changed). It reports
// whether o was taken (not one for servers that changed meanwhile).
func (b *bridge) runStream(ctx context.Context, o *openedStream, cameBack bool) bool {
	defer o.cancel()
	b.mu.Lock()
	// Under the lock: followProfile stores the new servers before it takes
	// it, so a change this check misses finds subs.end set and ends this
	// stream.
	if !slices.Equal(o.names, b.serverNames()) {
		b.mu.Unlock()
		return true // the servers changed while it opened: reopen at once for the new ones
	}
	b.subs.id = o.ack.Ack.ID
	b.subs.end = o.cancel
	b.subs.bare = false
	b.subs.sent = map[string]bool{}
	for _, u := range o.uris {
		b.subs.sent[u] = true
	}
	close(b.subs.open)
	b.mu.Unlock()
	b.ackServers(o.ack.Ack)
	defer func() {
		b.mu.Lock()
		b.subs.id, b.subs.end = 0, nil
		b.subs.open = make(chan struct{})
		b.mu.Unlock()
	}()
	// URIs the host added while the stream was opening; the events are
	// read meanwhile.
	b.askSyncURIs()
	if cameBack {
		// mcpd came back: the lists, and the profile, may have changed
		// while it was down.
		b.refreshProfileSoon()
		for _, k := range []service.SubscriptionKind{service.ToolsListChanged, service.PromptsListChanged, service.ResourcesListChanged} {
			b.deliver(&service.SubscriptionEvent{Kind: k})
		}
	}
	for {
		ev, err := o.stream.Recv()
		if err != nil {
			return true
		}
		if ev.Kind == service.ServerState {
			b.serverState(ctx, &ev)
			continue
		}
		if ev.Synthetic && isListChange(ev.Kind) {
			b.refreshProfileThen(&ev) // reconfig.go: a reload may have changed it
			continue
		}
		b.deliver(&ev)
	}
}

// reopenFor replaces the open stream, subscription id, for the served
// servers that changed (followProfile): the new stream is opened while the
// open one still delivers, so that nothing mcpd sends meanwhile is lost,
// and only then is the open one ended; the loop takes the new one over
// without telling the host of any change (followProfile did).
func (b *bridge) reopenFor(id uint64) {
	o, ok := b.openStream(b.ctx)
	b.mu.Lock()
	if b.subs.id != id {
		// The stream ended meanwhile (mcpd went away, or another reopen):
		// the loop opens the next one itself, for the servers of now.
		b.mu.Unlock()
		if ok {
			o.cancel()
		}
		return
	}
	end := b.subs.end
	if ok {
		if b.subs.next != nil {
			b.subs.next.cancel()
		}
		b.subs.next = o
	}
	b.mu.Unlock()
	end()
}

// deliver forwards one event to the host: untagged to a legacy host,
// tagged with the subscription id to each modern listen that asked.
func (b *bridge) deliver(ev *service.SubscriptionEvent) {
	switch ev.Kind {
	case service.LogMessage:
		b.deliverLog(ev)
		return
	case service.TaskStatus:
		b.deliverTaskStatus(ev) // taskstatus.go
		return
	}
	if method := changedList(ev.Kind); method != "" {
		b.listChanged(ev.Server, method)
		if b.aggr { // told with the other servers' changes of the moment
			b.changed(false, listKind(method), ev.Server, b.eventTime(ev))
			return
		}
	}
	var method string
	params := map[string]any{}
	match := func(l *listenSub) bool { return false }
	legacy := false
	b.mu.Lock()
	caps := b.capsLocked()
	switch ev.Kind {
	case service.ToolsListChanged:
		method, legacy = "notifications/tools/list_changed", b.initialized && caps.tools
		match = func(l *listenSub) bool { return l.tools }
	case service.PromptsListChanged:
		method, legacy = "notifications/prompts/list_changed", b.initialized && caps.prompts
		match = func(l *listenSub) bool { return l.prompts }
	case service.ResourcesListChanged:
		method, legacy = "notifications/resources/list_changed", b.initialized && caps.resources
		match = func(l *listenSub) bool { return l.resources }
	case service.ResourceUpdated:
		uri := ev.URI
		if owner, listed := b.uris[uri]; listed && owner != ev.Server {
			// Two servers list the URI; the host reads it from the first
			// (listing.noteURI), so only that one's updates concern it.
			b.mu.Unlock()
			return
		}
		method, legacy = "notifications/resources/updated", b.subs.legacy[uri]
		params["uri"] = uri
		match = func(l *listenSub) bool { return l.uris[uri] }
	}
	var tagged []json.RawMessage
	for _, l := range b.subs.listens {
		if match(l) {
			tagged = append(tagged, l.id)
		}
	}
	b.mu.Unlock()
	if method == "" {
		return
	}
	if legacy {
		b.notify(nil, method, params)
	}
	for _, id := range tagged {
		// "Every notification on the stream carries
		// _meta[io.modelcontextprotocol/subscriptionId]".
		p := map[string]any{"_meta": map[string]any{jsonrpc.MetaSubscriptionID: id}}
		for k, v := range params {
			p[k] = v
		}
		b.notify(id, method, p)
	}
}

// syncURIs makes the open Subscribe stream watch exactly the URIs the host
// subscribed to, waiting a short while for a stream to be open: it asks
// the syncer for a sync and waits for it, or for ctx.
func (b *bridge) syncURIs(ctx context.Context) {
	gen := b.askSyncURIs()
	for {
		b.mu.Lock()
		done, changed := b.subs.syncDone >= gen, b.subs.syncDoneC
		b.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// askSyncURIs asks for a sync of the stream's URIs, starting the syncer if
// it is not running, and returns the sync's number.
func (b *bridge) askSyncURIs() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.subs.syncAsked++
	if b.ctx.Err() != nil {
		// The bridge is ending, and may be waiting for b.wg already: no
		// syncer starts; the ask counts as done.
		b.subs.syncDone = b.subs.syncAsked
		close(b.subs.syncDoneC)
		b.subs.syncDoneC = make(chan struct{})
		return b.subs.syncAsked
	}
	if !b.subs.syncing {
		b.subs.syncing = true
		b.wg.Go(b.syncer)
	}
	return b.subs.syncAsked
}

// syncer runs the syncs asked for until none is left. One sync covers
// every one asked before it began.
func (b *bridge) syncer() {
	for {
		b.mu.Lock()
		gen := b.subs.syncAsked
		if b.subs.syncDone == gen {
			b.subs.syncing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		b.syncOnce(b.ctx)
		b.mu.Lock()
		b.subs.syncDone = gen
		close(b.subs.syncDoneC)
		b.subs.syncDoneC = make(chan struct{})
		b.mu.Unlock()
	}
}

// syncOnce sends the difference between the URIs the host subscribed to
// and those the open stream watches (syncer only). A stream that does not
// open soon, or ends, gets them when it is opened again.
func (b *bridge) syncOnce(ctx context.Context) {
	b.mu.Lock()
	open := b.subs.open
	b.mu.Unlock()
	t := time.NewTimer(readyTimeout)
	defer t.Stop()
	select {
	case <-open:
	case <-t.C:
		return // resubscribing will include them
	case <-ctx.Done():
		return
	}
	b.mu.Lock()
	id := b.subs.id
	var add, remove []string
	for u, n := range b.subs.refs {
		if n > 0 && !b.subs.sent[u] && !b.subs.refused[u] {
			add = append(add, u)
		}
	}
	for u := range b.subs.sent {
		if b.subs.refs[u] == 0 {
			remove = append(remove, u)
		}
	}
	b.mu.Unlock()
	if id == 0 || len(add)+len(remove) == 0 {
		return
	}
	err := b.updateSubscription(ctx, service.SubscriptionUpdate{ID: id, Add: add, Remove: remove})
	if service.CodeOf(err) == service.NotFound && len(add) > 0 {
		add, err = b.addEach(ctx, id, add, remove)
	}
	if err != nil {
		return // the stream ended; resubscribing will include them
	}
	b.mu.Lock()
	if b.subs.id == id {
		for _, u := range add {
			b.subs.sent[u] = true
		}
		for _, u := range remove {
			delete(b.subs.sent, u)
		}
	}
	b.mu.Unlock()
}

// legacySubscribe serves resources/subscribe and resources/unsubscribe.
func (b *bridge) legacySubscribe(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	var uri string
	if err := json.Unmarshal(r.params["uri"], &uri); err != nil || uri == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.uri required")
	}
	sub := r.method == "resources/subscribe"
	b.mu.Lock()
	switch {
	case sub && !b.subs.legacy[uri]:
		b.subs.legacy[uri] = true
		b.subs.refs[uri]++
	case !sub && b.subs.legacy[uri]:
		delete(b.subs.legacy, uri)
		b.subs.refs[uri]--
	}
	// Before the bridge is up, announceUp syncs them (marked before isUp is
	// asked again below, so that one of the two does).
	if !b.isUp() {
		b.upst.degraded = true
	}
	b.mu.Unlock()
	if b.isUp() {
		b.syncURIs(ctx)
	}
	return json.RawMessage("{}"), nil
}

// changedList is the list method whose change an event of kind tells, ""
// for other kinds.
func changedList(kind service.SubscriptionKind) string {
	switch kind {
	case service.ToolsListChanged:
		return "tools/list"
	case service.PromptsListChanged:
		return "prompts/list"
	case service.ResourcesListChanged:
		return "resources/list"
	}
	return ""
}

// updateSubscription adds and removes resource URIs of the open
// subscription.
func (b *bridge) updateSubscription(ctx context.Context, u service.SubscriptionUpdate) error {
	_, err := b.be.UpdateWatch(ctx, u)
	return err
}
