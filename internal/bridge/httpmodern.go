package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// errClosed is the error of a request that comes while the handler closes.
var errClosed = errors.New("the MCP endpoint is shutting down")

// errTooManyHosts refuses a modern host beyond the handler's bound.
var errTooManyHosts = errors.New("too many modern hosts are being served; try again later")

// modernKey is what one shared bridge serves: an endpoint and, when the
// backend tells hosts apart (HostCallers), one host of it: its clientInfo
// name and its peer.
type modernKey struct {
	ep         endpoint
	host, peer string
}

// sharedBridge is the bridge that serves the modern requests of one
// endpoint (they are stateless), or of one host of it. Several requests,
// and without HostCallers several hosts, share it, so each request gets
// an id of the bridge's own while it is served, and the host's id back
// on what is sent for it.
type sharedBridge struct {
	b      *bridge
	stop   func()        // ends the bridge's life
	ready  chan struct{} // closed once set up
	err    error         // the setup failure, set before ready closes
	serve  gate          // requests in progress
	nextID atomic.Uint64
	// caller is the host's (HostCallers), nil without; gone is closed
	// when the host is gone, and endCaller removes the caller.
	caller    any
	gone      <-chan struct{}
	endCaller func()

	mu      sync.Mutex             // guards streams
	streams map[string]*httpStream // by the bridge's request id
}

// Send routes the bridge's output to the stream of the request it belongs
// to; modern hosts take nothing outside a request.
func (sb *sharedBridge) Send(scope json.RawMessage, m *jsonrpc.Message) error {
	if scope == nil {
		return nil
	}
	sb.mu.Lock()
	st := sb.streams[string(scope)]
	sb.mu.Unlock()
	if st == nil {
		return nil // its request is over
	}
	return st.send(m)
}

// end ends the bridge once the requests in progress are done.
func (sb *sharedBridge) end() {
	<-sb.ready
	sb.stop()
	sb.serve.close()
	if sb.b != nil {
		sb.b.wg.Wait()
	}
	sb.endCaller()
}

// retire ends the bridge once the requests in progress are done, which
// may go on using it meanwhile.
func (sb *sharedBridge) retire() {
	sb.serve.close()
	sb.stop()
	sb.b.wg.Wait()
	sb.endCaller()
}

// sharedFor is the set-up shared bridge of k, made on first use for the
// request of ctx; a failed setup is tried again by the next request.
func (h *HTTPHandler) sharedFor(ctx context.Context, k modernKey) (*sharedBridge, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errClosed
	}
	sb := h.shared[k]
	if sb == nil {
		if len(h.shared) >= h.maxSessions {
			h.mu.Unlock()
			return nil, errTooManyHosts
		}
		sb = &sharedBridge{ready: make(chan struct{}), streams: map[string]*httpStream{}, endCaller: func() {}}
		h.shared[k] = sb
		h.mu.Unlock()
		h.setUpShared(ctx, k, sb)
	} else {
		h.mu.Unlock()
	}
	<-sb.ready
	return sb, sb.err
}

func (h *HTTPHandler) setUpShared(ctx context.Context, k modernKey, sb *sharedBridge) {
	defer close(sb.ready)
	life, stop := context.WithCancel(h.life)
	sb.stop = stop
	if hc, ok := h.be.(HostCallers); ok {
		sb.caller, sb.gone, sb.endCaller = hc.NewHostCaller(ctx, k.host)
		life = WithCaller(life, sb.caller)
	}
	b, err := startBridge(life, h.be, h.bridgeOptions(k.ep), sb)
	sb.b = b
	if err == nil {
		if sb.gone != nil {
			h.wg.Go(func() { h.endWhenGone(k, sb, life) }) // Close waits: it ends life
		}
		return
	}
	stop()
	b.wg.Wait()
	sb.endCaller()
	sb.b, sb.err, sb.endCaller = nil, err, func() {}
	h.forgetShared(k, sb)
}

// endWhenGone ends sb, the bridge of one modern host, once its host is
// gone, unless it ended first.
func (h *HTTPHandler) endWhenGone(k modernKey, sb *sharedBridge, life context.Context) {
	select {
	case <-life.Done():
		return
	case <-sb.gone:
	}
	h.forgetShared(k, sb)
	sb.end()
}

// forgetShared removes sb, the bridge of k, from the handler.
func (h *HTTPHandler) forgetShared(k modernKey, sb *sharedBridge) {
	h.mu.Lock()
	if h.shared[k] == sb {
		delete(h.shared, k)
	}
	h.mu.Unlock()
}

// enterModern finds the bridge that serves the modern request hr of r
// and enters it, answering the host itself when none can; the caller
// leaves it.
func (h *HTTPHandler) enterModern(w http.ResponseWriter, r *http.Request, ep endpoint, hr *hostReq) *sharedBridge {
	k := modernKey{ep: ep}
	hc, perHost := h.be.(HostCallers)
	if perHost {
		k.host, k.peer = implementationName(hr.info), hc.HostPeer(r.Context())
	}
	for range 2 { // again when the bridge found ended meanwhile (its host left)
		sb, err := h.sharedFor(r.Context(), k)
		switch {
		case errors.Is(err, errTooManyHosts) || errors.Is(err, errClosed):
			writeError(w, http.StatusServiceUnavailable, hr.id, jsonrpc.CodeInternalError, err.Error())
			return nil
		case err != nil:
			writeError(w, http.StatusInternalServerError, hr.id, jsonrpc.CodeInternalError, err.Error())
			return nil
		case perHost && !hc.Attach(r.Context(), sb.caller):
			h.forgetShared(k, sb) // endWhenGone ends it
		case !sb.serve.enter():
			h.forgetShared(k, sb)
		default:
			return sb
		}
	}
	writeError(w, http.StatusServiceUnavailable, hr.id, jsonrpc.CodeInternalError, "the MCP endpoint is shutting down")
	return nil
}

// implementationName is the name of an Implementation object (a
// clientInfo), "" for none.
func implementationName(raw json.RawMessage) string {
	if ms, ok := jsonrpc.Members(raw); ok && !slices.ContainsFunc(ms, func(m jsonrpc.Member) bool {
		return m.Key != "name" && strings.EqualFold(m.Key, "name") // decoding would take it too
	}) {
		if name := lastMember(ms, "name"); name != nil {
			if s, ok := jsonrpc.PlainText(name); ok {
				return s // the common case: no decoding
			}
		}
	}
	var impl struct {
		Name string `json:"name"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &impl) != nil {
		return ""
	}
	return impl.Name
}

// serveModern serves one modern request on the shared bridge of its
// endpoint, or of its host there (HostCallers).
func (h *HTTPHandler) serveModern(w http.ResponseWriter, r *http.Request, ep endpoint, hr *hostReq) {
	if !hr.modern {
		// The version header says modern, the body has no envelope.
		hr.bad = hr.checkEnvelope()
	}
	sb := h.enterModern(w, r, ep, hr)
	if sb == nil {
		return
	}
	defer sb.serve.leave() // entered first: learning the tools may start the bridge's goroutines
	rctx := r.Context()
	if sb.caller != nil {
		rctx = WithCaller(rctx, sb.caller) // the host's, not its connection's
	}
	if hr.method == "tools/call" && hr.bad == nil {
		sb.b.learnToolParams(rctx)
	}
	if e := checkModernHeaders(r.Header, hr, sb.b); e != nil {
		writeErr(w, http.StatusBadRequest, hr.id, e)
		return
	}
	if hr.bad != nil {
		writeErr(w, http.StatusBadRequest, hr.id, hr.bad)
		return
	}
	inner := json.RawMessage(append(strconv.AppendUint(append(make([]byte, 0, 32), `"mcpd-http-`...), sb.nextID.Add(1), 10), '"'))
	// The request ends with its connection, and with the bridge
	// (endInflight): it needs no context of its own besides the one
	// prepareRequest gives it, which its stream cancels (st.inflight).
	st := newHTTPStream(w, r, nil)
	st.modern, st.inner, st.outer = true, inner, hr.id
	st.listen = hr.method == "subscriptions/listen"
	key := string(inner)
	sb.mu.Lock()
	sb.streams[key] = st
	sb.mu.Unlock()
	hr.id, hr.endsWithBridge = inner, true
	run, refused := sb.b.prepareRequest(rctx, hr)
	if refused != nil { // cannot happen: the id is the bridge's own
		sb.mu.Lock()
		delete(sb.streams, key)
		sb.mu.Unlock()
		writeErr(w, http.StatusBadRequest, st.outer, refused)
		return
	}
	st.mu.Lock()
	st.inflight = hr.inflight
	st.mu.Unlock()
	run()
	sb.mu.Lock()
	delete(sb.streams, key)
	sb.mu.Unlock()
	if !st.end() && r.Context().Err() == nil && sb.b.ctx.Err() == nil && !st.writeFailed() {
		// Not answered and not cancelled: cannot happen, but never leave
		// the host without an answer.
		writeError(w, http.StatusInternalServerError, st.outer, jsonrpc.CodeInternalError, "the request ended without an answer")
	}
}
