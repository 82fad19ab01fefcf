package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// hostFlags are the kinds of child requests the MCP host answers.
// elicitURL: it also answers an elicitation in url mode (elicitation.url).
type hostFlags struct{ roots, sampling, elicitation, elicitURL bool }

func (f hostFlags) any() bool { return f.roots || f.sampling || f.elicitation }

// flagsOf reads what a ClientCapabilities object declares.
func flagsOf(caps json.RawMessage) hostFlags {
	return hostFlags{
		roots:       hostDeclares(caps, "roots/list"),
		sampling:    hostDeclares(caps, "sampling/createMessage"),
		elicitation: hostDeclares(caps, "elicitation/create"),
		elicitURL:   declaresURLElicitation(caps),
	}
}

// hostState is what the bridge registered with mcpd as host. Guarded by
// bridge.mu.
type hostState struct {
	flags   hostFlags     // what the host ever declared
	changed chan struct{} // closed, and replaced, when flags grow or the served servers change
	started bool          // hostLoop runs
}

func newHostState() hostState { return hostState{changed: make(chan struct{})} }

// declare adds what the host declared it answers (a legacy host at
// initialize, a modern one in each request's clientCapabilities) to the
// bridge's Host registration with mcpd, which it starts or renews. mcpd
// then routes a legacy child's roots/list, sampling/createMessage and
// elicitation/create to the bridge only for kinds the host answers.
func (b *bridge) declare(caps json.RawMessage) {
	f := flagsOf(caps)
	if !f.any() {
		return
	}
	b.mu.Lock()
	old := b.host.flags
	merged := hostFlags{old.roots || f.roots, old.sampling || f.sampling, old.elicitation || f.elicitation, old.elicitURL || f.elicitURL}
	grew := merged != old
	start := !b.host.started
	if grew {
		b.host.flags = merged
		close(b.host.changed)
		b.host.changed = make(chan struct{})
	}
	b.host.started = true
	b.mu.Unlock()
	if start {
		b.wg.Go(func() { b.hostLoop(b.ctx) })
	}
}

// hostLoop keeps the bridge registered with mcpd as host for its servers
// across mcpd restarts, and renews the registration when the host declares
// more: the new registration is made before the old one ends, and the old
// one ends only once its requests in flight are answered.
func (b *bridge) hostLoop(ctx context.Context) {
	select {
	case <-b.upst.up: // the server names are known
	case <-ctx.Done():
		return
	}
	var regs sync.WaitGroup
	defer regs.Wait()
	var prev *hostReg
	defer func() {
		if prev != nil {
			prev.retire()
		}
	}()
	delay := retryMin
	for ctx.Err() == nil {
		b.mu.Lock()
		flags, changed := b.host.flags, b.host.changed
		b.mu.Unlock()
		reg := newHostReg(ctx)
		regs.Go(func() { b.hostRun(reg, flags) })
		select {
		case <-reg.registered:
			if prev != nil {
				prev.retire()
				prev = nil
			}
			delay = retryMin
			select {
			case <-reg.done: // mcpd went away: register again
			case <-changed:
				prev = reg
			case <-ctx.Done():
				reg.retire()
			}
		case <-reg.done: // not accepted: mcpd is down
			t := time.NewTimer(delay)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
			delay = min(delay*2, retryMax)
		case <-ctx.Done():
			reg.retire()
		}
	}
}

// hostReg is one Host stream of the bridge.
type hostReg struct {
	ctx        context.Context
	cancel     context.CancelFunc
	registered chan struct{} // closed when mcpd accepted the registration
	done       chan struct{} // closed when the stream ended

	mu       sync.Mutex // guards calls, retiring
	calls    map[uint64]context.CancelFunc
	retiring bool
}

func newHostReg(ctx context.Context) *hostReg {
	rctx, cancel := context.WithCancel(ctx)
	return &hostReg{ctx: rctx, cancel: cancel, registered: make(chan struct{}), done: make(chan struct{}),
		calls: map[uint64]context.CancelFunc{}}
}

// retire ends the stream once no call on it is waiting for the host.
func (r *hostReg) retire() {
	r.mu.Lock()
	r.retiring = true
	idle := len(r.calls) == 0
	r.mu.Unlock()
	if idle {
		r.cancel()
	}
}

// hostRun runs one Host stream until it ends.
func (b *bridge) hostRun(reg *hostReg, flags hostFlags) {
	defer close(reg.done)
	defer reg.cancel()
	if b.ready(reg.ctx) != nil {
		return
	}
	b.hostServe(reg, flags)
}

// hostServe registers the host (Backend.ServeHost) until reg ends: mcpd
// calls the bridge's answers, each tracked in reg.calls until answered.
func (b *bridge) hostServe(reg *hostReg, flags hostFlags) {
	b.mu.Lock()
	info := b.hostInfo
	b.mu.Unlock()
	hr := service.HostRegistration{Servers: b.serverNames(), Roots: flags.roots, Sampling: flags.sampling,
		Elicitation: flags.elicitation, ElicitationURL: flags.elicitURL}
	if c := b.clientOf(info); c != nil {
		hr.Client = *c
	}
	var next atomic.Uint64 // the calls' keys in reg.calls
	_ = b.be.ServeHost(reg.ctx, hr, func() { close(reg.registered) },
		func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
			id := next.Add(1)
			cctx, ccancel := context.WithCancel(ctx)
			reg.mu.Lock()
			reg.calls[id] = ccancel
			reg.mu.Unlock()
			defer func() {
				reg.mu.Lock()
				delete(reg.calls, id)
				idle := reg.retiring && len(reg.calls) == 0
				reg.mu.Unlock()
				ccancel()
				if idle {
					reg.cancel()
				}
			}()
			return b.answerChild(cctx, server, method, params)
		}, func(_, method string, params json.RawMessage) { b.childNotification(method, params) })
}

// answerChild answers a legacy child's request that mcpd routed to the
// bridge: a legacy host gets it as a request; for a modern host, which
// cannot be sent requests, it becomes the input_required result of the
// host's call in flight on that server (mrtr.go).
func (b *bridge) answerChild(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	b.mu.Lock()
	legacy, caps := b.initialized, b.hostCaps
	b.mu.Unlock()
	if legacy {
		if !hostAnswers(caps, method, params) {
			return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "the MCP client behind this bridge does not answer %s: it did not declare the %s capability",
				requestKind(method, params), capabilityName(method, params))
		}
		if scope := b.latestAt(server); scope != nil {
			// "SHOULD relate to the originating client request": on HTTP,
			// on that request's POST stream (a host need open no GET).
			ctx = withScope(ctx, scope)
		}
		return b.hostRequest(ctx, method, params)
	}
	return b.askOpen(ctx, server, method, params)
}

// childNotification passes on a child's notification that mcpd routed to
// this bridge, notifications/elicitation/complete of a url elicitation the
// host was sent, to a legacy host that declared elicitation.url, as
// unsolicited output (on HTTP, the GET stream). A modern host has no such
// notification (it retries its call instead) and is sent none.
func (b *bridge) childNotification(method string, params json.RawMessage) {
	b.mu.Lock()
	legacy, caps := b.initialized, b.hostCaps
	b.mu.Unlock()
	if !legacy || method != "notifications/elicitation/complete" || !declaresURLElicitation(caps) || !json.Valid(params) {
		return
	}
	b.write(&jsonrpc.Message{Method: method, Params: params})
}

// calling records that a legacy host's request, ctx's scope, is in flight
// at server until the returned function is called: a child's request
// meanwhile is sent to the host in the scope of the latest such request
// (answerChild), the one mcpd routes it for.
func (b *bridge) calling(ctx context.Context, server string) func() {
	scope := scopeOf(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	if scope == nil || !b.host.flags.any() {
		return func() {} // nothing will be asked of this host
	}
	b.atServer[server] = append(b.atServer[server], scope)
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		l := b.atServer[server]
		if i := slices.IndexFunc(l, func(s json.RawMessage) bool { return bytes.Equal(s, scope) }); i >= 0 {
			l = slices.Delete(l, i, i+1)
		}
		if len(l) == 0 {
			delete(b.atServer, server)
		} else {
			b.atServer[server] = l
		}
	}
}

// latestAt is the scope of the legacy host's latest request in flight at
// server, nil when there is none.
func (b *bridge) latestAt(server string) json.RawMessage {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.atServer[server]; len(l) > 0 {
		return l[len(l)-1]
	}
	return nil
}
