package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// A modern host cannot be sent requests (modern servers never send any),
// so a legacy child's roots/list, sampling/createMessage or
// elicitation/create during a modern host's call is turned into the modern
// shape (2026-07-28 multi-round-trip requests): the bridge answers the host's pending
// tools/call, prompts/get or resources/read with an input_required result
// whose inputRequests carry the child's request, while the call stays in
// flight through mcpd. When the host retries with inputResponses and the
// bridge's requestState, the bridge answers the child's request and goes on
// waiting for the same call — it is not sent to mcpd again.

// mrtrMethods are the methods that may return input_required ("Allowed only
// on tools/call, prompts/get, resources/read").
var mrtrMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// parkTimeout bounds how long a call answered with input_required waits
// for the host's retry ("must not assume the client will ever retry"); it
// is then cancelled.
const parkTimeout = 10 * time.Minute

// statePrefix marks the bridge's own requestState values.
const statePrefix = "mcpdctl-bridge/"

// openCalls are a modern host's calls in flight. Guarded by bridge.mu.
type openCalls struct {
	seq    uint64
	calls  map[*openCall]bool   // in flight, parked or not
	parked map[string]*openCall // by requestState, waiting for the retry
}

func newOpenCalls() openCalls {
	return openCalls{calls: map[*openCall]bool{}, parked: map[string]*openCall{}}
}

// openCall is one modern host's call in flight through mcpd.
type openCall struct {
	server string
	caps   json.RawMessage // what the host declared for it
	seq    uint64          // most recent wins
	cancel context.CancelFunc
	result chan callResult // buffered 1: the call's outcome
	asks   chan *childAsk  // the child's requests for it
	done   chan struct{}   // closed when the call is over

	// Owned by the one goroutine that holds the call: the host request
	// waiting for it, or while parked, whoever takes it out of parked.
	pending map[string]*childAsk // by inputRequests key, sent to the host
	nextKey int
	resumed chan struct{} // closed when taken out of parked

	mu     sync.Mutex  // guards waiter
	waiter *callWaiter // the host request waiting for the call now; nil while parked
}

// callWaiter is the host request an open call's output (progress, log
// messages) goes to: the one that started it, then each retry.
type callWaiter struct {
	scope json.RawMessage // the request's scope in the sink
	token json.RawMessage // its progress token; nil: it asked for no progress
}

// openKey marks the context an open call runs on with the call: the call
// outlives the host request that started it, so what it sends the host goes
// to the request waiting for it now.
type openKey struct{}

// wait makes the host request of ctx, r, the one waiting for the call.
func (oc *openCall) wait(ctx context.Context, r *hostReq) {
	w := &callWaiter{scope: scopeOf(ctx)}
	if t := r.meta["progressToken"]; len(t) > 0 && string(t) != "null" {
		w.token = t
	}
	oc.mu.Lock()
	oc.waiter = w
	oc.mu.Unlock()
}

// waiting is the host request waiting for the call, nil while parked.
func (oc *openCall) waiting() *callWaiter {
	oc.mu.Lock()
	defer oc.mu.Unlock()
	return oc.waiter
}

// writeCallOutput sends m, output of the call ctx runs (notifications/
// progress or notifications/message), to the host request it belongs to:
// ctx's own, or for an open call the request waiting for it now, with that
// request's progress token. Nothing waits for a parked call (the host has
// its input_required answer) and m is dropped, as is progress for a retry
// that asked for none.
func (b *bridge) writeCallOutput(ctx context.Context, m *jsonrpc.Message) {
	oc, _ := ctx.Value(openKey{}).(*openCall)
	if oc == nil {
		b.writeFor(ctx, m)
		return
	}
	w := oc.waiting()
	if w == nil {
		return
	}
	if m.Method == "notifications/progress" {
		var top map[string]json.RawMessage
		if w.token == nil || json.Unmarshal(m.Params, &top) != nil || top == nil {
			return
		}
		top["progressToken"] = w.token
		p, err := json.Marshal(top)
		if err != nil {
			return
		}
		m.Params = p
	}
	b.emit(w.scope, m)
}

// childAsk is a child's request waiting for the host's answer.
type childAsk struct {
	ctx    context.Context // ends when the child no longer waits
	method string
	params json.RawMessage
	answer chan askAnswer // buffered 1
}

type askAnswer struct {
	result json.RawMessage
	err    *jsonrpc.Error
}

type callResult struct {
	res json.RawMessage
	err *jsonrpc.Error
}

// mrtr reports whether r's call must be open to the child's requests: a
// modern host's call of a method that may need input, declaring something
// it answers.
func (b *bridge) mrtr(r *hostReq) bool {
	return r.modern && mrtrMethods[r.method] && flagsOf(r.caps).any()
}

// awaitOpen runs the call on its own context (it may outlive the host
// request that started it; it keeps the request's caller) and waits for its outcome or the child's first
// request to the host.
func (b *bridge) awaitOpen(ctx context.Context, r *hostReq, server string, run func(context.Context) (json.RawMessage, *jsonrpc.Error)) (json.RawMessage, *jsonrpc.Error) {
	oc := &openCall{
		server: server, caps: r.caps,
		result: make(chan callResult, 1), asks: make(chan *childAsk), done: make(chan struct{}),
		pending: map[string]*childAsk{},
	}
	uctx, cancel := context.WithCancel(withCallerOf(context.WithValue(b.ctx, openKey{}, oc), ctx))
	oc.cancel = cancel
	oc.wait(ctx, r)
	b.mu.Lock()
	b.open.seq++
	oc.seq = b.open.seq
	b.open.calls[oc] = true
	b.mu.Unlock()
	b.wg.Go(func() {
		res, err := run(uctx)
		oc.result <- callResult{res, err}
	})
	return b.waitOpen(ctx, oc, nil)
}

// waitOpen waits for the call's outcome, or parks it with the child's
// requests (asks, and any that arrive) as an input_required answer.
func (b *bridge) waitOpen(ctx context.Context, oc *openCall, asks []*childAsk) (json.RawMessage, *jsonrpc.Error) {
	if len(asks) == 0 {
		select {
		case res := <-oc.result:
			b.closeOpen(oc, nil)
			return res.res, res.err
		case a := <-oc.asks:
			asks = append(asks, a)
		case <-ctx.Done():
			b.closeOpen(oc, jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled"))
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
		}
	}
	for more := true; more; {
		select {
		case a := <-oc.asks: // sent at the same moment
			asks = append(asks, a)
		default:
			more = false
		}
	}
	return b.park(oc, asks)
}

// park answers the host with input_required for asks and keeps the call
// until the host retries, or parkTimeout passes.
func (b *bridge) park(oc *openCall, asks []*childAsk) (json.RawMessage, *jsonrpc.Error) {
	requests := map[string]any{}
	for _, a := range asks {
		oc.nextKey++
		key := "mcpd-" + strconv.Itoa(oc.nextKey)
		oc.pending[key] = a
		// "values are request objects without jsonrpc/id". params is
		// optional for roots/list, but the Go SDK client fails to decode an
		// input request without it: a child's request without params gets {}.
		params := json.RawMessage("{}")
		if len(a.params) > 0 && string(a.params) != "null" {
			params = a.params
		}
		requests[key] = map[string]any{"method": a.method, "params": params}
	}
	var nonce [16]byte
	_, _ = rand.Read(nonce[:])
	state := statePrefix + hex.EncodeToString(nonce[:])
	oc.mu.Lock()
	oc.waiter = nil
	oc.mu.Unlock()
	oc.resumed = make(chan struct{})
	resumed := oc.resumed
	b.mu.Lock()
	b.open.parked[state] = oc
	b.mu.Unlock()
	b.wg.Go(func() {
		t := time.NewTimer(parkTimeout)
		defer t.Stop()
		select {
		case <-resumed:
			return
		case <-t.C:
		case <-b.ctx.Done():
		}
		if oc := b.takeState(state); oc != nil {
			b.closeOpen(oc, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the client did not retry the request with its input"))
		}
	})
	return marshalResult(map[string]any{
		"resultType":    "input_required",
		"inputRequests": requests,
		"requestState":  state,
	})
}

// takeParked takes out of parked the call r retries, if r carries one of
// the bridge's requestState values.
func (b *bridge) takeParked(r *hostReq) *openCall {
	var state string
	if json.Unmarshal(r.params["requestState"], &state) != nil || !strings.HasPrefix(state, statePrefix) {
		return nil
	}
	return b.takeState(state)
}

func (b *bridge) takeState(state string) *openCall {
	b.mu.Lock()
	oc := b.open.parked[state]
	delete(b.open.parked, state)
	b.mu.Unlock()
	if oc != nil {
		close(oc.resumed)
	}
	return oc
}

// resume delivers the host's inputResponses to the child's requests and
// waits again for the call; requests the host did not answer are asked
// again ("should re-ask for missing answers instead of erroring").
func (b *bridge) resume(ctx context.Context, r *hostReq, oc *openCall) (json.RawMessage, *jsonrpc.Error) {
	oc.wait(ctx, r)
	var responses map[string]json.RawMessage
	_ = json.Unmarshal(r.params["inputResponses"], &responses)
	var again []*childAsk
	for key, a := range oc.pending {
		if res, ok := responses[key]; ok {
			a.answer <- askAnswer{result: res}
		} else if a.ctx.Err() == nil {
			again = append(again, a)
		}
	}
	clear(oc.pending)
	return b.waitOpen(ctx, oc, again)
}

// closeOpen ends the call: it is cancelled if still in flight (a no-op
// when it has its outcome), and the child's requests still waiting get err.
func (b *bridge) closeOpen(oc *openCall, err *jsonrpc.Error) {
	b.mu.Lock()
	delete(b.open.calls, oc)
	b.mu.Unlock()
	oc.cancel()
	if err == nil {
		err = jsonrpc.Errorf(jsonrpc.CodeInternalError, "the call this request belongs to has ended")
	}
	for _, a := range oc.pending {
		a.answer <- askAnswer{err: err}
	}
	clear(oc.pending)
	close(oc.done)
}

// askOpen hands a child's request to the modern host's most recent call in
// flight on server that declared it answers method, and waits for the
// host's answer.
func (b *bridge) askOpen(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *jsonrpc.Error) {
	var oc *openCall
	b.mu.Lock()
	for c := range b.open.calls {
		if c.server == server && hostAnswers(c.caps, method, params) && (oc == nil || c.seq > oc.seq) {
			oc = c
		}
	}
	b.mu.Unlock()
	if oc == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound,
			"the MCP client behind this bridge can answer %s only during a call to server %q that declared the %s capability",
			requestKind(method, params), server, capabilityName(method, params))
	}
	a := &childAsk{ctx: ctx, method: method, params: params, answer: make(chan askAnswer, 1)}
	select {
	case oc.asks <- a:
	case <-oc.done:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "the call this request belongs to has ended")
	case <-ctx.Done():
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
	select {
	case ans := <-a.answer:
		return ans.result, ans.err
	case <-ctx.Done():
		return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
}
