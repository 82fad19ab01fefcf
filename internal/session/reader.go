package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

func (s *Session) readLoop() {
	var err error
	for {
		var msg []byte
		msg, err = s.conn.ReadMessage()
		if err != nil {
			break
		}
		s.handle(msg)
	}
	s.shutdown(err)
}

// shutdown fails every pending call and later ones with an error wrapping
// ErrClosed, stops the child's request handlers and waits for them.
func (s *Session) shutdown(readErr error) {
	closed := fmt.Errorf("server %q: %w", s.opts.Server, ErrClosed)
	if hung := s.hung(); hung != nil {
		closed = fmt.Errorf("%w: %w", ErrClosed, hung)
	} else if readErr != nil && !errors.Is(readErr, io.EOF) {
		closed = fmt.Errorf("server %q: %w: %w", s.opts.Server, ErrClosed, readErr)
	}
	s.mu.Lock()
	s.closedErr = closed
	pending := s.pending
	s.pending = map[uint64]*call{}
	s.mu.Unlock()
	for _, c := range pending {
		c.ch <- outcome{err: fmt.Errorf("%s: %w", c.method, closed)}
	}
	s.closeListens(closed)
	s.log.Debug("session closed", zap.Int("failed_calls", len(pending)), zap.Error(readErr))
	s.stop()
	s.handlers.Wait()
	close(s.done)
}

func (s *Session) handle(msg []byte) {
	env, err := jsonrpc.DecodeEnvelope(msg) // no copy of params or result
	if err != nil {
		s.skipInvalid(msg, "invalid message skipped", zap.Error(err))
		return
	}
	hasID := len(env.ID) > 0 && string(env.ID) != "null"
	switch {
	case env.Method != "" && hasID:
		s.serveRequest(env)
	case env.Method != "":
		s.notification(env)
	case hasID || env.Error != nil:
		s.response(env)
	default:
		s.skipInvalid(msg, "message without method, id or error skipped")
	}
}

// Invalid messages of one session logged at Warn, and how much of each;
// later ones are logged at Debug (a child that floods cannot flood the
// log) and Stats.MessagesInvalid keeps counting.
const (
	warnInvalidMessages = 20
	invalidPrefixLen    = 80
)

// skipInvalid counts and logs a message of the child that is JSON but not
// a valid JSON-RPC message.
func (s *Session) skipInvalid(msg []byte, what string, fields ...zap.Field) {
	n := s.invalid.Add(1)
	fields = append(fields, zap.ByteString("message_prefix", msg[:min(len(msg), invalidPrefixLen)]),
		zap.Int64("messages_invalid", n))
	if n <= warnInvalidMessages {
		s.log.Warn(what, fields...)
		return
	}
	s.log.Debug(what, fields...)
}

func (s *Session) response(env jsonrpc.Envelope) {
	if s.listenResponse(env) {
		return
	}
	c := s.takeCall(env.ID)
	if c == nil {
		n := s.dropped.Add(1)
		if id, err := strconv.ParseUint(string(env.ID), 10, 64); err != nil || id == 0 || id > s.nextID.Load() {
			// An id mcpd never sent (a string for a number, a made-up
			// one): the server's bug, which its caller sees only as a
			// timeout; warned of like an invalid message.
			if n <= warnInvalidMessages {
				s.log.Warn("response to an id mcpd never sent, dropped", zap.ByteString("id", env.ID), zap.Int64("responses_dropped", n))
				return
			}
		}
		// "The canceller should ignore any response that still arrives."
		s.log.Debug("unsolicited response dropped", zap.ByteString("id", env.ID))
		return
	}
	resp := &Response{Result: env.Result, Error: env.Error}
	if resp.Error == nil && resp.Result == nil {
		resp.Result = json.RawMessage("null")
	}
	if resp.Error != nil {
		resp.Result = nil
	}
	c.ch <- outcome{resp: resp}
}

// takeCall removes the pending call whose id is the JSON value rawID from
// the pending map and returns it; nil if there is none.
func (s *Session) takeCall(rawID json.RawMessage) *call {
	id, err := strconv.ParseUint(string(rawID), 10, 64)
	if err != nil {
		return nil
	}
	return s.takeID(id)
}

func (s *Session) notification(env jsonrpc.Envelope) {
	if s.listenNotification(env) {
		return
	}
	switch env.Method {
	case "notifications/progress":
		s.progressNotification(env.Params)
		return
	case "notifications/message":
		routed, during := s.routeMessage(env.Params)
		if routed {
			return
		}
		if s.opts.OnNotification != nil {
			s.opts.OnNotification(Notification{Method: env.Method, Params: env.Params, DuringCalls: during})
		}
		return
	case "notifications/cancelled":
		// "when a child's id is referenced in a cancel from the server
		// (legacy), abort the local handler for that server→client request."
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		if json.Unmarshal(env.Params, &p) == nil && len(p.RequestID) > 0 {
			s.mu.Lock()
			in := s.incoming[idKey(p.RequestID)]
			s.mu.Unlock()
			if in != nil {
				in.cancel()
				return
			}
		}
	}
	if s.opts.OnNotification != nil {
		s.opts.OnNotification(Notification{Method: env.Method, Params: env.Params})
	}
}

// progressNotification maps the child-side token back to the app's and
// hands the params to that request's caller only.
func (s *Session) progressNotification(params json.RawMessage) {
	var top map[string]json.RawMessage
	if json.Unmarshal(params, &top) != nil {
		s.skipInvalid(params, "notifications/progress without an object as params skipped")
		return
	}
	var token string
	_ = json.Unmarshal(top["progressToken"], &token)
	s.mu.Lock()
	c := s.progress[token]
	s.mu.Unlock()
	if c == nil || c.onProgress == nil {
		s.log.Debug("progress for unknown token dropped", zap.String("token", token))
		return
	}
	top["progressToken"] = c.appToken
	b, err := json.Marshal(top)
	if err != nil {
		return
	}
	c.onProgress(b)
}

func idKey(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// serveRequest answers a request from the child: ping itself ("A legacy
// client must also answer server-sent pings"), others through OnRequest or
// -32601 ("answer any unexpected server request with -32601"). Answers are
// written from a goroutine owned by the session so the reader never blocks
// on the child's stdin.
func (s *Session) serveRequest(env jsonrpc.Envelope) {
	key := idKey(env.ID)
	ctx, cancel := context.WithCancel(s.lifetime)
	me := &incoming{cancel: cancel}
	s.mu.Lock()
	if !s.callPendingLocked() {
		ctx = context.WithValue(ctx, unsolicitedKey{}, true)
	}
	if prev := s.incoming[key]; prev != nil {
		prev.cancel() // a reused id replaces the older request
	}
	s.incoming[key] = me
	s.mu.Unlock()
	s.handlers.Add(1)
	go func() {
		defer s.handlers.Done()
		defer func() {
			s.mu.Lock()
			if s.incoming[key] == me {
				delete(s.incoming, key)
			}
			s.mu.Unlock()
			cancel()
		}()
		var (
			result json.RawMessage
			rerr   *RPCError
		)
		switch {
		case env.Method == "ping":
			result = emptyObject
		case s.opts.OnRequest == nil:
			rerr = &RPCError{Code: jsonrpc.CodeMethodNotFound, Message: "Method not found"}
		default:
			result, rerr = s.opts.OnRequest(ctx, env.Method, env.Params)
		}
		if ctx.Err() != nil {
			// Cancelled by the child ("Receivers SHOULD NOT send a response
			// for the cancelled request") or the session ended.
			return
		}
		if err := s.answer(ctx, env.ID, result, rerr); err != nil {
			s.log.Debug("answer to server request failed", zap.String("method", env.Method), zap.Error(err))
		}
	}()
}

func (s *Session) answer(ctx context.Context, id json.RawMessage, result json.RawMessage, rerr *RPCError) error {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	if rerr != nil {
		e, err := json.Marshal(rerr)
		if err != nil {
			return err
		}
		b = append(append(b, `,"error":`...), e...)
	} else {
		if len(result) == 0 {
			result = emptyObject
		}
		b = append(append(b, `,"result":`...), result...)
	}
	return s.conn.WriteMessage(ctx, append(b, '}'))
}

// callMethods are the requests a child's own request may belong to: the
// ones that do work for a caller ("Allowed only on tools/call, prompts/get,
// resources/read" for input requests, and completion/complete).
var callMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true, "completion/complete": true}

// callPendingLocked reports whether a call a request of the child may
// belong to is in flight. s.mu must be held.
func (s *Session) callPendingLocked() bool {
	for _, c := range s.pending {
		if callMethods[c.method] {
			return true
		}
	}
	return false
}

type unsolicitedKey struct{}

// Unsolicited reports whether the child request whose handler got ctx
// (Options.OnRequest) belongs to no call: when it arrived, no call it could
// belong to (tools/call, prompts/get, resources/read, completion/complete)
// was in flight on the session, as with a roots/list a server sends as it
// starts or after notifications/roots/list_changed. On stdio nothing names
// the call a request belongs to, so a request that arrives while a call is
// in flight is taken to be that call's.
func Unsolicited(ctx context.Context) bool {
	v, _ := ctx.Value(unsolicitedKey{}).(bool)
	return v
}

// WithUnsolicited returns ctx marked as Unsolicited reports, for callers
// of an OnRequest handler other than the session (tests, other doors).
func WithUnsolicited(ctx context.Context) context.Context {
	return context.WithValue(ctx, unsolicitedKey{}, true)
}
