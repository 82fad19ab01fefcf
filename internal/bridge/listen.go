package bridge

// A modern host's subscriptions/listen: what it asks for, what the
// servers agree to, and its end.

import (
	"context"
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// listenSub is one modern subscriptions/listen of the host.
type listenSub struct {
	id                        json.RawMessage
	tools, prompts, resources bool
	uris                      map[string]bool
	tasks                     map[string]bool // task ids whose statuses it asked for (taskstatus.go)
	taskURIs                  []string        // what mcpd is asked to watch for them (taskstatus.go)
}

// listenParams are what a subscriptions/listen asks for.
type listenParams struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
	TaskIDs               []string `json:"taskIds"`
}

// listen serves a modern subscriptions/listen until the host cancels it.
func (b *bridge) listen(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	r.answerOnCancel = true
	var p listenParams
	_ = json.Unmarshal(r.params["notifications"], &p)
	l := b.openListen(ctx, r, p)

	// "The first message the server sends for a subscription is
	// notifications/subscriptions/acknowledged, tagged with the
	// subscription id."
	b.notify(r.id, "notifications/subscriptions/acknowledged", map[string]any{
		"_meta":         map[string]any{jsonrpc.MetaSubscriptionID: r.id},
		"notifications": l.agreed(),
	})
	key := idKey(r.id)
	b.mu.Lock()
	b.subs.listens[key] = l
	b.mu.Unlock()
	r.ack()

	select {
	case <-ctx.Done():
	case <-b.ctx.Done():
	}
	return b.endListen(key, l, r)
}

// openListen is the subscription of listen r asking for p, what the
// servers can tell agreed, its URIs counted and watched.
func (b *bridge) openListen(ctx context.Context, r *hostReq, p listenParams) *listenSub {
	b.refreshInfo(ctx)
	up := b.isUp()
	b.mu.Lock()
	caps := b.capsLocked()
	if !up {
		// Not up yet (mcpd is down): agree to what the host asks; the
		// bridge announces the list changes itself once it is up.
		caps = listCaps{tools: true, prompts: true, resources: true, subscribe: true}
		b.upst.degraded = true
	}
	l := &listenSub{
		id:        r.id,
		tools:     p.ToolsListChanged && caps.tools,
		prompts:   p.PromptsListChanged && caps.prompts,
		resources: p.ResourcesListChanged && caps.resources,
		uris:      map[string]bool{},
		tasks:     listenTasks(p.TaskIDs, !up || declaresTasks(b.capsMapLocked())),
	}
	l.taskURIs = b.taskURIsLocked(l.tasks) // taskstatus.go
	for _, u := range l.taskURIs {
		b.subs.refs[u]++
	}
	if caps.subscribe {
		for _, u := range p.ResourceSubscriptions {
			if !l.uris[u] {
				l.uris[u] = true
				b.subs.refs[u]++
			}
		}
	}
	b.mu.Unlock()
	if up {
		b.syncURIs(ctx) // else the Subscribe stream opens with them (announceUp)
	}
	return l
}

// endListen drops listen l (under key) of request r once it ended, and is
// its answer: none when the host cancelled it or another bridge takes it
// on, else the closing result.
func (b *bridge) endListen(key string, l *listenSub, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	b.dropListen(key, l)
	switch {
	case b.opts.HandedOver != nil && b.opts.HandedOver():
		r.answerOnCancel = false // the next bridge takes it on
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "handed over")
	case b.ctx.Err() == nil:
		// The host cancelled it: "Receiver should stop work, free
		// resources and not answer."
		r.answerOnCancel = false
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "cancelled")
	}
	sctx, cancel := context.WithTimeout(b.ctx, readyTimeout)
	b.syncURIs(sctx)
	cancel()
	// "it should answer the listen request with a plain success result
	// tagged with the subscription id".
	return marshalResult(map[string]any{
		"resultType": "complete",
		"_meta":      map[string]any{jsonrpc.MetaSubscriptionID: r.id},
	})
}

// agreed is the filter the listen was acknowledged with: "params.notifications
// is the subset the server agreed to honour."
func (l *listenSub) agreed() map[string]any {
	agreed := map[string]any{}
	if l.tools {
		agreed["toolsListChanged"] = true
	}
	if l.prompts {
		agreed["promptsListChanged"] = true
	}
	if l.resources {
		agreed["resourcesListChanged"] = true
	}
	if len(l.uris) > 0 {
		agreed["resourceSubscriptions"] = slices.Sorted(maps.Keys(l.uris))
	}
	if len(l.tasks) > 0 {
		agreed["taskIds"] = slices.Sorted(maps.Keys(l.tasks))
	}
	return agreed
}

// dropListen forgets the ended listen key, l, and what it watched.
func (b *bridge) dropListen(key string, l *listenSub) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.subs.listens, key)
	for u := range l.uris {
		b.subs.refs[u]--
	}
	for _, u := range l.taskURIs {
		b.subs.refs[u]--
	}
}
