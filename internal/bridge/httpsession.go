package bridge

import (
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"sync"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// session is a legacy host's session: a bridge of its own, from the host's
// initialize until it sends DELETE, its host is gone (janitor) or the
// handler closes. The answer to a request, and what the bridge sends while serving
// it, go on that request's POST response; unsolicited output goes on the
// session's GET stream, and waits in a bounded queue while none is open.
type session struct {
	id   string
	ep   endpoint // where it was started: it is served there only
	h    *HTTPHandler
	b    *bridge
	stop context.CancelFunc // ends the bridge's life
	// caller is what the session's Backend calls are attributed to (the
	// backend's SessionCallers), nil when the backend has none; endCaller
	// removes it.
	caller    any
	endCaller func()
	serve     gate // requests and streams in progress

	mu       sync.Mutex             // guards the fields below
	streams  map[string]*httpStream // POST responses by request id
	get      *httpStream            // the GET stream, nil when none is open
	queue    []*jsonrpc.Message     // unsolicited output while no GET stream is open
	active   int                    // requests in flight and open GET streams
	lastUsed time.Time
	dropped  int // queued messages dropped since the last warning
}

// Send routes the bridge's output: in a request's scope to its POST
// response (dropped once that has ended), else to the GET stream.
func (s *session) Send(scope json.RawMessage, m *jsonrpc.Message) error {
	s.mu.Lock()
	if scope != nil {
		st := s.streams[string(scope)]
		s.mu.Unlock()
		if st == nil {
			return nil // its request is over: nothing is sent for it
		}
		return st.send(m)
	}
	if get := s.get; get != nil {
		s.mu.Unlock()
		return get.send(m)
	}
	if len(s.queue) == sessionQueue {
		s.queue = s.queue[1:]
		s.dropped++
		if s.dropped == 1 || s.dropped%sessionQueue == 0 {
			s.h.opts.Warnf("bridge: session %s has no GET stream open; dropped %d of its oldest unsolicited messages", s.id[:8], s.dropped)
		}
	}
	s.queue = append(s.queue, m)
	s.mu.Unlock()
	return nil
}

// newSessionID is a crypto-random id of visible ASCII.
func newSessionID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b[:])
}

// startSession serves a legacy initialize without a session id: it starts
// a session and answers on it.
func (h *HTTPHandler) startSession(w http.ResponseWriter, r *http.Request, ep endpoint, hr *hostReq) {
	if e := initializeParamsError(hr); e != nil {
		writeErr(w, http.StatusOK, hr.id, e) // a JSON-RPC error; no session
		return
	}
	s := &session{id: newSessionID(), ep: ep, h: h, streams: map[string]*httpStream{}, lastUsed: time.Now()}
	life, stop := context.WithCancel(h.life)
	s.stop = stop
	s.endCaller = func() {}
	if sc, ok := h.be.(SessionCallers); ok {
		s.caller, s.endCaller = sc.NewCaller(r.Context(), initializeClientName(hr))
		life = WithCaller(life, s.caller)
	}
	b, err := startBridge(life, h.be, h.bridgeOptions(ep), s)
	if err != nil {
		stop()
		b.wg.Wait()
		s.endCaller()
		writeError(w, http.StatusInternalServerError, hr.id, jsonrpc.CodeInternalError, err.Error())
		return
	}
	s.b = b
	if msg := h.addSession(s); msg != "" {
		s.end()
		writeError(w, http.StatusServiceUnavailable, hr.id, jsonrpc.CodeInternalError, msg)
		return
	}
	w.Header().Set(hdrSessionID, s.id)
	s.serveRequest(w, r, hr)
}

// initializeClientName is the clientInfo name of the initialize hr, ""
// for none.
func initializeClientName(hr *hostReq) string {
	return implementationName(hr.params["clientInfo"])
}

// addSession registers s, evicting the longest idle session when there are
// maxSessions; it says why when s cannot be added.
func (h *HTTPHandler) addSession(s *session) string {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return errClosed.Error()
	}
	var evict *session
	if len(h.sessions) >= h.maxSessions {
		var oldest time.Time
		for _, o := range h.sessions {
			if used, active := o.usage(); active == 0 && (evict == nil || used.Before(oldest)) {
				evict, oldest = o, used
			}
		}
		if evict == nil {
			h.mu.Unlock()
			return fmt.Sprintf("too many sessions: %d are open and busy; end one with DELETE, or try again later", len(h.sessions))
		}
		delete(h.sessions, evict.id)
	}
	h.sessions[s.id] = s
	h.mu.Unlock()
	if evict != nil {
		h.opts.Warnf("bridge: %d HTTP sessions open; ended the longest idle one", h.maxSessions)
		evict.end()
	}
	return ""
}

// session finds the session of id, answering the host when there is none.
func (h *HTTPHandler) session(w http.ResponseWriter, id string, ep endpoint, reqID json.RawMessage) *session {
	if id == "" {
		writeError(w, http.StatusBadRequest, reqID, jsonrpc.CodeInvalidRequest,
			"missing Mcp-Session-Id header: start a session with initialize, or send the request with the modern per-request _meta")
		return nil
	}
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	switch {
	case s == nil:
		writeError(w, http.StatusNotFound, reqID, jsonrpc.CodeInvalidRequest, "session not found: it ended or never existed; initialize a new one")
	case s.ep != ep:
		// A session serves the servers of the endpoint it was started
		// at; elsewhere it does not exist.
		writeError(w, http.StatusNotFound, reqID, jsonrpc.CodeInvalidRequest,
			fmt.Sprintf("session not found at this endpoint: it was started at %s; initialize a new one here", s.ep.path()))
		return nil
	}
	return s
}

// usage is when s was last used and how many requests and streams it has.
func (s *session) usage() (time.Time, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastUsed, s.active
}

// use counts a request or stream in (+1) or out (-1).
func (s *session) use(delta int) {
	s.mu.Lock()
	s.active += delta
	s.lastUsed = time.Now()
	s.mu.Unlock()
}

// serveRequest serves one request of the session's host on its POST.
func (s *session) serveRequest(w http.ResponseWriter, r *http.Request, hr *hostReq) {
	if !s.serve.enter() {
		writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "session not found: it ended; initialize a new one")
		return
	}
	defer s.serve.leave()
	ctx := r.Context()
	if s.caller != nil {
		ctx = WithCaller(ctx, s.caller) // the session's, not its connection's
	}
	// The request ends with its connection, and with the session's bridge
	// (endInflight): it needs no context of its own besides the one
	// prepareRequest gives it, which its stream cancels (st.inflight).
	hr.endsWithBridge = true
	run, refused := s.b.prepareRequest(ctx, hr)
	if refused != nil { // its id is in flight: the stream is the first's
		writeErr(w, http.StatusBadRequest, hr.id, refused)
		return
	}
	st := newHTTPStream(w, r, nil)
	st.inflight = hr.inflight
	key := string(hr.id)
	s.mu.Lock()
	s.streams[key] = st
	s.active++
	s.mu.Unlock()
	run()
	if s.b.ctx.Err() != nil && r.Context().Err() == nil && !hr.inflight.byHost.Load() {
		// The session ended (DELETE, eviction, shutdown) with the request
		// in flight: the host, still waiting, is told (dropped when it
		// was answered).
		_ = st.send(&jsonrpc.Message{ID: hr.id, Error: jsonrpc.Errorf(jsonrpc.CodeInternalError,
			"request cancelled: its session ended before it was answered")})
	}
	s.mu.Lock()
	if s.streams[key] == st { // a request reusing the id once this one left has its own
		delete(s.streams, key)
	}
	s.mu.Unlock()
	s.use(-1)
	if !st.end() {
		// Cancelled (notifications/cancelled, or the session ended): the
		// request gets no answer; its stream ends empty.
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
	}
}

// deliver dispatches a notification or response of the host (the answer
// to a request the bridge sent it): 202.
func (s *session) deliver(w http.ResponseWriter, body []byte) {
	if !s.serve.enter() {
		writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "session not found: it ended; initialize a new one")
		return
	}
	defer s.serve.leave()
	s.use(0)
	s.b.dispatch(s.b.ctx, body)
	w.WriteHeader(http.StatusAccepted)
}

// end ends the session: its requests are cancelled, its streams closed,
// and its goroutines waited for.
func (s *session) end() {
	s.stop()
	s.serve.close()
	s.b.wg.Wait()
	s.endCaller()
}

// get serves a GET: the session's stream of unsolicited output.
func (h *HTTPHandler) get(w http.ResponseWriter, r *http.Request, ep endpoint) {
	sid := r.Header.Get(hdrSessionID)
	if sid == "" {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest,
			"GET needs the Mcp-Session-Id of a legacy session; protocol version "+jsonrpc.ModernVersion+" has no GET stream")
		return
	}
	s := h.session(w, sid, ep, nil)
	if s == nil {
		return
	}
	if !accepts(r.Header.Values("Accept"), "text/event-stream") {
		writeError(w, http.StatusNotAcceptable, nil, jsonrpc.CodeInvalidRequest, "not acceptable: the GET stream is text/event-stream")
		return
	}
	if !s.serve.enter() {
		writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "session not found: it ended; initialize a new one")
		return
	}
	defer s.serve.leave()
	ctx, cancel := requestContext(r.Context(), s.b.ctx)
	defer cancel()
	if s.caller != nil {
		ctx = WithCaller(ctx, s.caller) // the session's, not its connection's
	}
	st := newHTTPStream(w, r, cancel)
	st.get = true
	s.mu.Lock()
	if s.get != nil {
		s.mu.Unlock()
		writeError(w, http.StatusConflict, nil, jsonrpc.CodeInvalidRequest, "this session already has a GET stream open")
		return
	}
	s.get = st
	s.active++
	queued := s.queue
	s.queue, s.dropped = nil, 0
	// Queued messages go first: s.mu is held until they are written.
	_ = st.open()
	for _, m := range queued {
		_ = st.send(m)
	}
	s.mu.Unlock()
	<-ctx.Done()
	st.end()
	s.mu.Lock()
	if s.get == st {
		s.get = nil
	}
	s.mu.Unlock()
	s.use(-1)
}

// delete serves a DELETE: the host ends its session.
func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request, ep endpoint) {
	sid := r.Header.Get(hdrSessionID)
	if sid == "" {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, nil, jsonrpc.CodeInvalidRequest,
			"DELETE needs the Mcp-Session-Id of a legacy session; protocol version "+jsonrpc.ModernVersion+" has no sessions")
		return
	}
	h.mu.Lock()
	s := h.sessions[sid]
	if s != nil && s.ep != ep {
		s = nil // not this endpoint's
	} else {
		delete(h.sessions, sid)
	}
	h.mu.Unlock()
	if s == nil {
		writeError(w, http.StatusNotFound, nil, jsonrpc.CodeInvalidRequest, "session not found: it ended or never existed")
		return
	}
	s.end()
	w.WriteHeader(http.StatusNoContent)
}

// janitor ends the sessions whose host is gone: no GET stream open and
// no request in flight, and none for h.idle. That covers a host that
// closed its GET stream (or whose connection closed it) and one that
// never opened one; a session with an open GET stream stays, however
// quiet. A session ends within h.idle and a quarter (at most a minute) of
// its host's last sign of life.
func (h *HTTPHandler) janitor() {
	t := time.NewTicker(min(h.idle/4+time.Millisecond, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-h.life.Done():
			return
		case <-t.C:
		}
		h.expire(time.Now())
	}
}

// expire ends the sessions without stream or request since before
// now-h.idle.
func (h *HTTPHandler) expire(now time.Time) {
	var idle []*session
	h.mu.Lock()
	for id, s := range h.sessions {
		if used, active := s.usage(); active == 0 && now.Sub(used) >= h.idle {
			idle = append(idle, s)
			delete(h.sessions, id)
		}
	}
	h.mu.Unlock()
	for _, s := range idle {
		s.end()
	}
}
