package subscriptions

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

func (u *upstream) applyModern(ctx context.Context, want wants) ServerAck {
	resources, tasks := splitTasks(want.uris) // tasks.go
	f := listenFilter{ToolsListChanged: want.tools, PromptsListChanged: want.prompts,
		ResourcesListChanged: want.resources, ResourceSubscriptions: resources}
	for _, t := range tasks {
		if _, id, _ := taskOf(t); id != "" {
			f.TaskIDs = append(f.TaskIDs, id)
		}
	}
	filter, _ := json.Marshal(f)
	key := string(filter)
	if key == "{}" {
		// Only log messages are wanted: modern servers never send them on a listen.
		u.closeListens(ctx, "subscription filter changed")
		return ServerAck{Era: "modern", State: true}
	}
	if u.listen != nil && key == u.listenKey {
		u.mu.Lock()
		a := u.ack
		u.mu.Unlock()
		return a
	}
	if u.listen == nil && time.Now().Before(u.retryAt) {
		u.mu.Lock()
		a := u.ack
		u.mu.Unlock()
		return a
	}
	old := u.listen
	if old != nil && u.zombie != nil {
		// The listen replaced at the previous switch goes first, and is
		// waited for: a server that keeps one registration per session
		// (the Go SDK v1.8.0) drops it when it closes any listen, so
		// it must close before the new one registers, not after. On a
		// server that keeps listens apart the current one delivers
		// meanwhile.
		u.retireZombie(ctx)
	}
	l, a, err := u.open(ctx, filter)
	if err != nil {
		if old != nil {
			u.mu.Lock()
			a = u.ack
			u.mu.Unlock()
		}
		return a
	}
	// The new listen delivers (its acknowledgement made it current:
	// cutover.go). The one it replaces stays open, ignored but for what
	// only it delivers, until the next switch retires it first: one listen
	// per change, and no cancel that could land after the new listen
	// registered.
	u.listen, u.listenKey = l, key
	if old != nil {
		u.zombie = old
	}
	u.log.Debug("listen switched", zap.String("filter", key))
	return a
}

// retireZombie cancels the listen left open by the previous switch and
// waits, at most closeGrace, until the server closed it.
func (u *upstream) retireZombie(ctx context.Context) {
	z := u.zombie
	u.zombie = nil
	z.Cancel("subscription filter changed")
	t := time.NewTimer(closeGrace)
	defer t.Stop()
	select {
	case <-z.Closed():
	case <-t.C:
	case <-ctx.Done():
	}
	z.Forget()
}

// open opens a listen with filter; its acknowledgement makes it the one
// whose notifications are delivered (onListen).
func (u *upstream) open(ctx context.Context, filter json.RawMessage) (Listener, ServerAck, error) {
	u.listenGen++
	gen := u.listenGen
	cctx, cancel := context.WithTimeout(ctx, u.m.opts.CallTimeout)
	l, err := u.child.Listen(cctx, filter, func(method string, params json.RawMessage) {
		u.onListen(gen, method, params)
	})
	cancel()
	if err != nil {
		u.log.Warn("subscriptions/listen failed", zap.Error(err))
		return nil, ServerAck{Era: "modern", State: true, Error: "subscriptions/listen failed: " + err.Error()}, err
	}
	var got listenFilter
	_ = json.Unmarshal(l.Ack(), &got)
	for _, id := range got.TaskIDs {
		got.ResourceSubscriptions = append(got.ResourceSubscriptions, TaskURI(u.name, id))
	}
	slices.Sort(got.ResourceSubscriptions) // ServerAck.URIs is sorted
	got.ResourceSubscriptions = slices.Compact(got.ResourceSubscriptions)
	return l, ServerAck{Era: "modern", State: true,
		ToolsListChanged:     got.ToolsListChanged,
		PromptsListChanged:   got.PromptsListChanged,
		ResourcesListChanged: got.ResourcesListChanged,
		URIs:                 got.ResourceSubscriptions,
	}, nil
}

// closeListens cancels every listen and waits, at most closeGrace, until
// the server has closed them. A server that keeps one registration per
// session (the Go SDK v1.8.0) drops it when it closes a cancelled listen;
// a listen opened before that cleanup (the next app subscribing right after
// the last one left) would lose its registration and never deliver.
func (u *upstream) closeListens(ctx context.Context, reason string) {
	var ls []Listener
	for _, l := range []Listener{u.listen, u.zombie} {
		if l != nil {
			l.Cancel(reason)
			ls = append(ls, l)
		}
	}
	t := time.NewTimer(closeGrace)
	defer t.Stop()
wait:
	for _, l := range ls {
		select {
		case <-l.Closed():
		case <-t.C:
			break wait
		case <-ctx.Done():
			break wait
		}
	}
	for _, l := range ls {
		l.Forget()
	}
	u.listen, u.listenKey, u.zombie = nil, "", nil
	u.releaseHeld(true)
	u.cut.reset()
}

// cancelListens cancels every listen (no listen is wanted any more).
func (u *upstream) cancelListens(reason string) {
	for _, l := range []Listener{u.listen, u.zombie} {
		if l != nil {
			l.Cancel(reason)
			l.Forget()
		}
	}
	u.listen, u.listenKey, u.zombie = nil, "", nil
	u.releaseHeld(true)
	u.cut.reset()
}

// promise reports what the upstream subscription on the current child
// guarantees (OnPromises).
func (u *upstream) promise(a ServerAck) {
	if u.m.opts.OnPromises != nil && u.child != nil {
		u.m.opts.OnPromises(u.target(), u.child.Pid(), a)
	}
}

// onListen takes a message delivered on listen gen (reader goroutine, in
// stream order). The acknowledgement of a newer listen is the cut-over
// point; cutover.go decides which notifications of the listens that overlap
// around it reach the apps, so that none is lost and none is delivered
// twice. Every notification invalidates the cache first, whether it is
// delivered, held or dropped as a duplicate.
func (u *upstream) onListen(gen uint64, method string, params json.RawMessage) {
	if method != "notifications/subscriptions/acknowledged" {
		params = stripSubscriptionID(params)
		if u.m.opts.Observe != nil {
			u.m.opts.Observe(u.target(), method, params)
		}
	}
	out, held := u.cut.take(gen, method, params, time.Now())
	for _, n := range out {
		u.m.notification(u.target(), n.method, n.params)
	}
	if held {
		select {
		case u.heldWake <- struct{}{}:
		default:
		}
	}
}

// releaseHeld delivers the notifications that waited long enough for a
// twin (all of them when all is set) and re-arms the timer for the rest
// (loop only).
func (u *upstream) releaseHeld(all bool) {
	out, more := u.cut.release(time.Now(), all)
	for _, n := range out {
		u.m.notification(u.target(), n.method, n.params)
	}
	if len(out) > 0 {
		u.log.Debug("held listen notifications delivered", zap.Int("count", len(out)))
	}
	if more && u.heldTimer == nil {
		u.heldTimer = time.NewTimer(dupWindow)
	}
}

// stripSubscriptionID removes mcpd's listen tag from params._meta (apps
// never see mcpd's listen ids).
func stripSubscriptionID(params json.RawMessage) json.RawMessage {
	var top map[string]json.RawMessage
	if json.Unmarshal(params, &top) != nil {
		return params
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(top["_meta"], &meta) != nil || meta == nil {
		return params
	}
	delete(meta, jsonrpc.MetaSubscriptionID)
	if len(meta) == 0 {
		delete(top, "_meta")
	} else {
		b, _ := json.Marshal(meta)
		top["_meta"] = b
	}
	b, err := json.Marshal(top)
	if err != nil {
		return params
	}
	return b
}
