package core

import (
	"context"
	"encoding/json"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// This file routes a child's notifications/elicitation/complete to the one
// host that was sent the url elicitation it completes (the same
// elicitationId, from the same server or instance), never to the others:
// the host that opened the URL for its user is the one waiting for it.

const (
	methodElicitComplete = "notifications/elicitation/complete"
	// maxOpenElicitations bounds the url elicitations remembered for their
	// completion; beyond it the oldest is forgotten.
	maxOpenElicitations = 1024
)

// elicitKey names a url elicitation: its server, the instance's key ("" for
// the shared child) and its elicitationId.
type elicitKey struct{ server, inst, id string }

// hostNotice is a child's notification on its way to one host.
type hostNotice struct {
	server, method string
	params         json.RawMessage
}

// ServeChildNotification routes a child's notification for the app that
// answered one of its requests (notifications/elicitation/complete). Pass it
// as supervisor.Options.OnHostNotification. It never blocks.
func (s *Service) ServeChildNotification(ctx context.Context, server, method string, params json.RawMessage) {
	if !s.hosts.notify(ctx, server, method, params) {
		s.log.Debug("child notification reached no host", zap.String("server", server), zap.String("method", method))
	}
}

// elicitKeyOf is the key of a url elicitation of server with params, ok
// false when the params name no elicitationId.
func elicitKeyOf(ctx context.Context, server string, params json.RawMessage) (elicitKey, bool) {
	var p struct {
		ElicitationID string `json:"elicitationId"`
	}
	if json.Unmarshal(params, &p) != nil || p.ElicitationID == "" {
		return elicitKey{}, false
	}
	k := elicitKey{server: server, id: p.ElicitationID}
	if ri, ok := supervisor.RequestInstanceFrom(ctx); ok {
		k.inst = ri.Key
	}
	return k, true
}

// openElicitation remembers that h was sent the url elicitation k.
func (r *hostRegistry) openElicitation(k elicitKey, h *host) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.elicits[k]; !ok {
		if len(r.elicitOrder) >= maxOpenElicitations {
			delete(r.elicits, r.elicitOrder[0])
			r.elicitOrder = r.elicitOrder[1:]
		}
		r.elicitOrder = append(r.elicitOrder, k)
	}
	r.elicits[k] = h
}

// closeElicitation forgets k and returns the host it was sent to, if any.
func (r *hostRegistry) closeElicitation(k elicitKey) *host {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.elicits[k]
	if h == nil {
		return nil
	}
	delete(r.elicits, k)
	for i, x := range r.elicitOrder {
		if x == k {
			r.elicitOrder = append(r.elicitOrder[:i:i], r.elicitOrder[i+1:]...)
			break
		}
	}
	return h
}

// dropElicitationsLocked forgets the elicitations sent to h. r.mu is held.
func (r *hostRegistry) dropElicitationsLocked(h *host) {
	kept := r.elicitOrder[:0]
	for _, k := range r.elicitOrder {
		if r.elicits[k] == h {
			delete(r.elicits, k)
			continue
		}
		kept = append(kept, k)
	}
	r.elicitOrder = kept
}

// elicitURL relays a url elicitation to h and remembers h for its
// completion while the host may still complete it: an answer other than
// accept (or none) means no completion will follow.
func (r *hostRegistry) elicitURL(ctx context.Context, h *host, server string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
	k, ok := elicitKeyOf(ctx, server, params)
	if ok {
		r.openElicitation(k, h)
	}
	res, rerr := r.send(ctx, h, server, methodElicit, params)
	if ok && !accepted(res, rerr) {
		r.closeElicitation(k)
	}
	return res, rerr
}

// accepted reports whether an elicitation's answer accepts it.
func accepted(res json.RawMessage, rerr *session.RPCError) bool {
	var a struct {
		Action string `json:"action"`
	}
	return rerr == nil && json.Unmarshal(res, &a) == nil && a.Action == "accept"
}

// notify hands a notifications/elicitation/complete of server's child to
// the host its elicitation was sent to; it reports false when there is no
// such host (or its queue is full, or the method is another). It never
// blocks.
func (r *hostRegistry) notify(ctx context.Context, server, method string, params json.RawMessage) bool {
	if method != methodElicitComplete {
		return false
	}
	k, ok := elicitKeyOf(ctx, server, params)
	if !ok {
		return false
	}
	h := r.closeElicitation(k)
	if h == nil {
		return false
	}
	select {
	case h.out <- hostNotice{server: server, method: method, params: params}:
		return true
	default: // a full queue or a host gone: a notification waits for nobody
		return false
	}
}
