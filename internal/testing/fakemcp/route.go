package fakemcp

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Request routing: each line read is a request, a notification or an answer
// to one of the fake's own requests. A request passes the era checks in the
// order it was read, then is served on its own goroutine (dispatch.go), so
// answers may arrive out of order.

// errNoReply, returned by a handler, means the handler answered itself or
// must not answer.
var errNoReply = &jsonrpc.Error{Code: 0, Message: "no reply"}

func (s *server) handleLine(line []byte) {
	var msg jsonrpc.Message
	if err := json.Unmarshal(line, &msg); err != nil {
		s.logf("fakemcp: bad line: %v", err)
		return
	}
	switch {
	case msg.Method != "" && msg.ID != nil:
		s.count(msg.Method, msg.ID)
		s.startRequest(&msg)
	case msg.Method != "":
		s.count(msg.Method, nil)
		s.handleNotification(&msg)
	case msg.ID != nil:
		s.count("response", nil)
		s.logf("recv response %s", msg.ID)
		s.mu.Lock()
		ch := s.waiting[string(msg.ID)]
		delete(s.waiting, string(msg.ID))
		s.mu.Unlock()
		if ch != nil {
			ch <- &msg
		}
	}
}

// count counts a received message and logs "recv <method>" for a
// notification, "recv <method> <id>" for a request.
func (s *server) count(method string, id json.RawMessage) {
	s.mu.Lock()
	s.counts[method]++
	s.mu.Unlock()
	switch {
	case method == "response":
	case id != nil:
		s.logf("recv %s %s", method, compact(id))
	default:
		s.logf("recv %s", method)
	}
}

func (s *server) handleNotification(msg *jsonrpc.Message) {
	switch msg.Method {
	case "notifications/initialized":
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if json.Unmarshal(msg.Params, &p) != nil || p.RequestID == nil {
			return
		}
		id := compact(p.RequestID)
		s.mu.Lock()
		s.cancelled = append(s.cancelled, id)
		s.cancelReasons = append(s.cancelReasons, p.Reason)
		cancel := s.inflight[string(id)]
		s.mu.Unlock()
		s.errLine("cancelled " + string(id))
		if cancel != nil {
			cancel()
		}
	}
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// req is one request being handled.
type req struct {
	ctx    context.Context
	id     json.RawMessage
	method string
	params map[string]json.RawMessage
	meta   map[string]json.RawMessage
	modern bool
	seq    int64 // order in which requests were read
}

// startRequest decides synchronously what must be decided in order (the
// handshake state) and runs everything else concurrently, so answers can
// arrive out of order.
func (s *server) startRequest(msg *jsonrpc.Message) {
	r, ok := s.parseRequest(msg)
	if !ok {
		return
	}
	s.mu.Lock()
	initialized := s.initialized
	s.mu.Unlock()

	if msg.Method == "server/discover" && s.flags["exitonprobe"] {
		s.errLine("fakemcp: exit on probe")
		os.Exit(exitProbe)
	}
	if s.flags["silentprobe"] && !initialized && msg.Method != "initialize" {
		return
	}
	if !s.settleEra(r) {
		return
	}
	if !r.modern && s.legacyHandshake(r, initialized) {
		return
	}
	s.runRequest(r)
}

// parseRequest numbers msg and reads its params and _meta into a req;
// params that are not an object are answered with an error and not ok.
func (s *server) parseRequest(msg *jsonrpc.Message) (*req, bool) {
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.mu.Unlock()
	r := &req{id: compact(msg.ID), method: msg.Method, params: map[string]json.RawMessage{}, seq: seq}
	if len(msg.Params) > 0 && json.Unmarshal(msg.Params, &r.params) != nil {
		s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params must be an object"))
		return nil, false
	}
	if m := r.params["_meta"]; m != nil {
		_ = json.Unmarshal(m, &r.meta)
	}
	_, r.modern = r.meta[jsonrpc.MetaProtocolVersion]
	return r, true
}

// settleEra sets the era r is served in by the flags (modern, legacy or
// dual) and checks a modern request's envelope; a request failing the
// check is answered with the error and not ok.
func (s *server) settleEra(r *req) bool {
	switch {
	case s.flags["modern"]:
		if rerr := s.checkEnvelope(r); rerr != nil {
			s.reply(r, nil, rerr)
			return false
		}
		r.modern = true
	case s.flags["legacy"]:
		r.modern = false
	default: // dual: a request with the modern envelope is served statelessly
		if r.modern {
			if rerr := s.checkEnvelope(r); rerr != nil {
				s.reply(r, nil, rerr)
				return false
			}
		}
	}
	return true
}

// legacyHandshake handles what the legacy era decides in order: no
// server/discover, the initialize handshake (hung, asking roots/list
// first, or answered) and the refusal of requests before it. It reports
// whether it handled r.
func (s *server) legacyHandshake(r *req, initialized bool) bool {
	switch {
	case r.method == "server/discover":
		s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found"))
		return true
	case r.method == "initialize" && s.flags["hanginit"]:
		return true
	case r.method == "initialize" && s.flags["rootsatinit"]:
		// Asked before the handshake ends, so no call can be in flight;
		// the reader reads on meanwhile (the answer comes through it).
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			m, err := s.request(ctx, "roots/list", nil, nil)
			got := "error: no answer"
			if err == nil {
				got = answerText(m)
			}
			s.mu.Lock()
			s.initRoots = got
			s.mu.Unlock()
			s.initialize(r)
		}()
		return true
	case r.method == "initialize":
		s.initialize(r)
		return true
	case r.method != "ping" && !initialized:
		s.reply(r, nil, jsonrpc.Errorf(jsonrpc.CodeInvalidRequest, "server not initialized"))
		return true
	}
	return false
}

// runRequest dispatches r on a goroutine of its own, cancellable by
// notifications/cancelled while in flight, and replies unless it was
// cancelled (a listen is answered even then).
func (s *server) runRequest(r *req) {
	s.noteStall(r) // before the reader reads on (tools.go)
	ctx, cancel := context.WithCancel(context.Background())
	r.ctx = ctx
	s.mu.Lock()
	s.inflight[string(r.id)] = cancel
	s.mu.Unlock()
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.inflight, string(r.id))
			s.mu.Unlock()
			cancel()
		}()
		result, rerr := s.dispatch(r)
		if rerr == errNoReply {
			return
		}
		if ctx.Err() != nil && r.method != "subscriptions/listen" {
			return // "Receivers ... SHOULD NOT send a response for the cancelled request."
		}
		s.reply(r, result, rerr)
	}()
}
