package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// errClosed is the error of a request that comes while the handler closes.
var errClosed = errors.New("the MCP endpoint is shutting down")

// sharedBridge is the one bridge of an endpoint that serves every modern
// request (they are stateless). Many hosts share it, so each request gets
// an id of the bridge's own while it is served, and the host's id back on
// what is sent for it.
type sharedBridge struct {
	b      *bridge
	stop   func()        // ends the bridge's life
	ready  chan struct{} // closed once set up
	err    error         // the setup failure, set before ready closes
	serve  gate          // requests in progress
	nextID atomic.Uint64

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
}

// sharedFor is the set-up shared bridge of endpoint ep, made on first
// use; a failed setup is tried again by the next request.
func (h *HTTPHandler) sharedFor(ep endpoint) (*sharedBridge, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, errClosed
	}
	sb := h.shared[ep]
	if sb == nil {
		sb = &sharedBridge{ready: make(chan struct{}), streams: map[string]*httpStream{}}
		h.shared[ep] = sb
		h.mu.Unlock()
		h.setUpShared(ep, sb)
	} else {
		h.mu.Unlock()
	}
	<-sb.ready
	return sb, sb.err
}

func (h *HTTPHandler) setUpShared(ep endpoint, sb *sharedBridge) {
	defer close(sb.ready)
	life, stop := context.WithCancel(h.life)
	sb.stop = stop
	b, err := startBridge(life, h.be, h.bridgeOptions(ep), sb)
	sb.b = b
	if err == nil {
		return
	}
	stop()
	b.wg.Wait()
	sb.b, sb.err = nil, err
	h.mu.Lock()
	if h.shared[ep] == sb {
		delete(h.shared, ep)
	}
	h.mu.Unlock()
}

// serveModern serves one modern request on the endpoint's shared bridge.
func (h *HTTPHandler) serveModern(w http.ResponseWriter, r *http.Request, ep endpoint, hr *hostReq) {
	if !hr.modern {
		// The version header says modern, the body has no envelope.
		hr.bad = hr.checkEnvelope()
	}
	sb, err := h.sharedFor(ep)
	if err != nil {
		writeError(w, http.StatusInternalServerError, hr.id, jsonrpc.CodeInternalError, err.Error())
		return
	}
	if !sb.serve.enter() {
		writeError(w, http.StatusServiceUnavailable, hr.id, jsonrpc.CodeInternalError, "the MCP endpoint is shutting down")
		return
	}
	defer sb.serve.leave() // entered first: learning the tools may start the bridge's goroutines
	if hr.method == "tools/call" && hr.bad == nil {
		sb.b.learnToolParams(r.Context())
	}
	if e := checkModernHeaders(r.Header, hr, sb.b); e != nil {
		writeErr(w, http.StatusBadRequest, hr.id, e)
		return
	}
	if hr.bad != nil {
		writeErr(w, http.StatusBadRequest, hr.id, hr.bad)
		return
	}
	ctx, cancel := requestContext(r, sb.b.ctx)
	defer cancel()
	inner := json.RawMessage(strconv.Quote("mcpd-http-" + strconv.FormatUint(sb.nextID.Add(1), 10)))
	st := newHTTPStream(w, cancel)
	st.modern, st.inner, st.outer = true, inner, hr.id
	st.listen = hr.method == "subscriptions/listen"
	key := string(inner)
	sb.mu.Lock()
	sb.streams[key] = st
	sb.mu.Unlock()
	hr.id = inner
	run, refused := sb.b.prepareRequest(ctx, hr)
	if refused != nil { // cannot happen: the id is the bridge's own
		sb.mu.Lock()
		delete(sb.streams, key)
		sb.mu.Unlock()
		writeErr(w, http.StatusBadRequest, st.outer, refused)
		return
	}
	run()
	sb.mu.Lock()
	delete(sb.streams, key)
	sb.mu.Unlock()
	if !st.end() && ctx.Err() == nil {
		// Not answered and not cancelled: cannot happen, but never leave
		// the host without an answer.
		writeError(w, http.StatusInternalServerError, st.outer, jsonrpc.CodeInternalError, "the request ended without an answer")
	}
}
