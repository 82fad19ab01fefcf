package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Notification methods of the listen protocol.
const (
	methodListen       = "subscriptions/listen"
	methodAcknowledged = "notifications/subscriptions/acknowledged"
	methodCancelled    = "notifications/cancelled"
)

// maxForgotten bounds how many ended listen ids are remembered so that their
// late closing result and stray tagged notifications are absorbed silently.
const maxForgotten = 256

// ErrListenEnded is the error of a listen the server closed (with a result
// or with notifications/cancelled).
var ErrListenEnded = errors.New("session: listen closed by the server")

// Listen is one open subscriptions/listen request on a modern child. It has
// no deadline: it lasts until the server closes it (a result or
// notifications/cancelled), Cancel, or the child's exit.
type Listen struct {
	s        *Session
	id       uint64
	key      string
	onNotify func(Notification)

	ackCh  chan struct{} // closed when the acknowledgement (or the end) arrived
	done   chan struct{} // closed when the listen ended
	closed chan struct{} // closed when the server's closing message arrived (or the child exited)

	mu        sync.Mutex // guards the fields below
	ack       json.RawMessage
	ackClosed bool
	cancelled bool // Cancel was called (notifications/cancelled sent)
	err       error
	closedSet bool
}

// ID is the listen's JSON-RPC id, which is also its subscription id.
func (l *Listen) ID() uint64 { return l.id }

// Ack is the params.notifications object of the server's acknowledgement:
// the subset of the filter it agreed to honour.
func (l *Listen) Ack() json.RawMessage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ack
}

// Closed is closed once the server has closed the listen (its closing
// result or notifications/cancelled arrived, also after Cancel) or the child
// exited. Servers that send nothing after a cancel never close it: call
// Forget after a grace period.
func (l *Listen) Closed() <-chan struct{} { return l.closed }

// Forget stops waiting for the server's closing message of a cancelled
// listen and stops routing its notifications; late ones are absorbed
// silently.
func (l *Listen) Forget() {
	l.s.mu.Lock()
	if l.s.listens.open[l.key] == l {
		l.s.listens.forget(l.key)
	}
	l.s.mu.Unlock()
}

func (l *Listen) markClosed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closedSet {
		l.closedSet = true
		close(l.closed)
	}
}

// Done is closed when the listen has ended; Err says why.
func (l *Listen) Done() <-chan struct{} { return l.done }

// Err is nil while the listen is open; then ErrListenEnded (the server
// closed it), context.Canceled (Cancel), an error wrapping ErrClosed (the
// child exited) or the server's *RPCError (it refused the listen).
func (l *Listen) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err
}

// wasCancelled reports whether Cancel was called.
func (l *Listen) wasCancelled() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cancelled
}

// end closes the listen with err once; it reports whether it did.
func (l *Listen) end(err error) bool {
	l.mu.Lock()
	if l.err != nil {
		l.mu.Unlock()
		return false
	}
	l.err = err
	if !l.ackClosed {
		l.ackClosed = true
		close(l.ackCh)
	}
	l.mu.Unlock()
	close(l.done)
	return true
}

// listenTable is the session's open listens, keyed by the compact JSON of
// their id. It is guarded by Session.mu.
type listenTable struct {
	open      map[string]*Listen
	forgotten map[string]struct{}
	order     []string // forgotten keys, oldest first
}

func (t *listenTable) forget(key string) {
	delete(t.open, key)
	if t.forgotten == nil {
		t.forgotten = map[string]struct{}{}
	}
	if _, ok := t.forgotten[key]; ok {
		return
	}
	t.forgotten[key] = struct{}{}
	t.order = append(t.order, key)
	if len(t.order) > maxForgotten {
		delete(t.forgotten, t.order[0])
		t.order = t.order[1:]
	}
}

// Listen opens a subscriptions/listen with the given filter (the
// params.notifications object) and returns once the server acknowledged it.
// ctx bounds only that wait: the listen itself has no deadline. Every
// notification tagged with the listen's subscription id is passed to
// onNotify (on the reader goroutine; it must not block) instead of
// Options.OnNotification, the acknowledgement first. If the server answers with an error, that
// *RPCError is returned.
func (s *Session) Listen(ctx context.Context, filter json.RawMessage, onNotify func(Notification)) (*Listen, error) {
	info := s.info.Load()
	if info == nil || info.Era != EraModern {
		return nil, fmt.Errorf("listen %q: %w", s.opts.Server, errors.New("subscriptions/listen needs a modern server"))
	}
	if len(filter) == 0 {
		filter = emptyObject
	}
	params, err := s.stamp(map[string]json.RawMessage{"notifications": filter}, nil, info.ProtocolVersion, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("listen %q: %w", s.opts.Server, err)
	}
	l := &Listen{
		s:        s,
		id:       s.nextID.Add(1),
		onNotify: onNotify,
		ackCh:    make(chan struct{}),
		done:     make(chan struct{}),
		closed:   make(chan struct{}),
	}
	l.key = strconv.FormatUint(l.id, 10)
	msg, err := encodeRequest(l.id, methodListen, params)
	if err != nil {
		return nil, fmt.Errorf("listen %q: encode: %w", s.opts.Server, err)
	}
	s.mu.Lock()
	if s.closedErr != nil {
		err := s.closedErr
		s.mu.Unlock()
		return nil, err
	}
	if s.listens.open == nil {
		s.listens.open = map[string]*Listen{}
	}
	s.listens.open[l.key] = l
	s.mu.Unlock()

	if err := s.conn.WriteMessage(ctx, msg); err != nil {
		s.mu.Lock()
		s.listens.forget(l.key)
		s.mu.Unlock()
		return nil, s.failedWrite(ctx, err)
	}
	select {
	case <-l.ackCh:
	case <-ctx.Done():
		l.Cancel(ctx.Err().Error())
		l.Forget()
		return nil, fmt.Errorf("listen %q: waiting for the acknowledgement: %w", s.opts.Server, ctx.Err())
	}
	l.mu.Lock()
	ended := l.err
	l.mu.Unlock()
	var rerr *RPCError
	if ended != nil && (errors.As(ended, &rerr) || errors.Is(ended, ErrClosed)) {
		return nil, ended
	}
	// A listen closed right after its acknowledgement is still returned:
	// the caller sees Done closed.
	return l, nil
}

// Cancel ends the listen: it sends notifications/cancelled with the
// listen's id (only if the listen is still open) and closes Done.
// Notifications the server sent before it read the cancel still reach
// onNotify until the server closes the listen (its closing result closes
// Closed) or Forget is called; call Forget when no longer interested.
// Idempotent.
func (l *Listen) Cancel(reason string) {
	l.s.mu.Lock()
	open := l.s.listens.open[l.key] == l
	l.mu.Lock()
	first := !l.cancelled
	l.cancelled = true
	l.mu.Unlock()
	l.s.mu.Unlock()
	if !open || !first {
		l.end(context.Canceled)
		return
	}
	p, _ := json.Marshal(struct {
		RequestID uint64 `json:"requestId"`
		Reason    string `json:"reason,omitempty"`
	}{l.id, reason})
	l.s.sendCancel(l.id, p) // best effort, bounded (write.go)
	l.end(context.Canceled)
}

// listenResponse handles a response whose id is a listen's: the server's
// closing result or its refusal. It reports whether id belonged to a listen
// (open or forgotten).
func (s *Session) listenResponse(env jsonrpc.Envelope) bool {
	// Every response passes here: a scalar id (the usual number) is its own
	// key, looked up without building a string; only an object or array id
	// needs idKey's compaction.
	key := []byte(env.ID)
	if len(key) > 0 && (key[0] == '{' || key[0] == '[') {
		key = []byte(idKey(env.ID))
	}
	s.mu.Lock()
	l := s.listens.open[string(key)]
	_, gone := s.listens.forgotten[string(key)]
	if l != nil {
		s.listens.forget(l.key)
	}
	s.mu.Unlock()
	switch {
	case l != nil && env.Error != nil:
		l.end(env.Error)
	case l != nil && l.wasCancelled():
		l.end(context.Canceled) // the close of a listen mcpd cancelled
	case l != nil:
		l.end(fmt.Errorf("%w (server %q)", ErrListenEnded, s.opts.Server))
	}
	if l != nil {
		l.markClosed()
	}
	return l != nil || gone
}

// listenNotification routes a notification tagged with a subscription id
// (or a server's notifications/cancelled for a listen) to its listen. It
// reports whether the notification was consumed.
func (s *Session) listenNotification(env jsonrpc.Envelope) bool {
	if env.Method == methodCancelled {
		return s.listenCancelled(env)
	}
	key, ok := subscriptionKey(env.Params)
	if !ok {
		return false
	}
	s.mu.Lock()
	l := s.listens.open[key]
	_, gone := s.listens.forgotten[key]
	s.mu.Unlock()
	// A cancelled listen still routes until the server closed it or the
	// caller forgot it: what the server wrote before it read the cancel is
	// legitimately delivered ("the canceller should ignore any response",
	// not notifications already sent), and may be the only notice of a
	// change (subscriptions' listen switch).
	if l == nil {
		if gone {
			s.strayNotification(env)
		}
		return gone
	}
	if env.Method == methodAcknowledged {
		l.acknowledged(env)
		return true
	}
	if l.onNotify != nil {
		l.onNotify(Notification{Method: env.Method, Params: env.Params})
	}
	return true
}

// listenCancelled ends the listen a server's notifications/cancelled names,
// if it is open, and reports whether it was.
func (s *Session) listenCancelled(env jsonrpc.Envelope) bool {
	var p struct {
		RequestID json.RawMessage `json:"requestId"`
	}
	if json.Unmarshal(env.Params, &p) != nil || len(p.RequestID) == 0 {
		return false
	}
	key := idKey(p.RequestID)
	s.mu.Lock()
	l := s.listens.open[key]
	if l != nil {
		s.listens.forget(key)
	}
	s.mu.Unlock()
	if l == nil {
		return false
	}
	// "the only permitted server use of that notification": the server
	// ended the listen on its own.
	if l.wasCancelled() {
		l.end(context.Canceled) // the close of a listen mcpd cancelled
	} else {
		l.end(fmt.Errorf("%w (server %q, by notifications/cancelled)", ErrListenEnded, s.opts.Server))
	}
	l.markClosed()
	return true
}

// subscriptionKey is the key of the listen a notification's params are
// tagged with (their _meta's subscription id); ok is false when they are
// not tagged.
func subscriptionKey(params json.RawMessage) (key string, ok bool) {
	if !bytes.Contains(params, []byte(jsonrpc.MetaSubscriptionID)) {
		return "", false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil {
		return "", false
	}
	raw, ok := p.Meta[jsonrpc.MetaSubscriptionID]
	if !ok {
		return "", false
	}
	return idKey(raw), true
}

// strayNotification drops a notification for a listen that ended, but
// lets OnStrayNotification see it.
func (s *Session) strayNotification(env jsonrpc.Envelope) {
	s.log.Debug("notification for an ended listen dropped", zap.String("method", env.Method))
	if s.opts.OnStrayNotification != nil {
		s.opts.OnStrayNotification(Notification{Method: env.Method, Params: env.Params})
	}
}

// acknowledged records the server's acknowledgement env of l, the first
// one only, and passes that one to l's onNotify.
func (l *Listen) acknowledged(env jsonrpc.Envelope) {
	var a struct {
		Notifications json.RawMessage `json:"notifications"`
	}
	_ = json.Unmarshal(env.Params, &a)
	if len(a.Notifications) == 0 {
		a.Notifications = emptyObject
	}
	l.mu.Lock()
	first := l.ack == nil && !l.ackClosed
	if first {
		l.ack = a.Notifications
		l.ackClosed = true
		close(l.ackCh)
	}
	l.mu.Unlock()
	if first && l.onNotify != nil {
		// In stream order, so the caller can cut over from an older
		// listen exactly here.
		l.onNotify(Notification{Method: env.Method, Params: env.Params})
	}
}

// closeListens ends every open listen when the child's stdout closed.
func (s *Session) closeListens(closed error) {
	s.mu.Lock()
	open := s.listens.open
	s.listens.open = nil
	s.mu.Unlock()
	for _, l := range open {
		l.end(closed)
		l.markClosed()
	}
}
