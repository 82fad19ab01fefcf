package session

import (
	"encoding/json"
	"fmt"

	"go.uber.org/zap"
)

// CallErrorReporter is implemented by a Conn that can tell that one
// request will get no answer from the server (an HTTP transport: an HTTP
// error status without a JSON-RPC body, a response larger than the
// limit). New registers a handler with it: that request fails at once
// with the Conn's error instead of waiting for its deadline.
type CallErrorReporter interface {
	OnCallError(func(id json.RawMessage, err error))
}

// callError fails the pending call or open listen with JSON-RPC id id.
// It may run on any goroutine.
func (s *Session) callError(id json.RawMessage, err error) {
	if c := s.takeCall(id); c != nil {
		s.log.Debug("request failed by the transport", zap.Uint64("id", c.id), zap.String("method", c.method), zap.Error(err))
		c.ch <- outcome{err: fmt.Errorf("%s: %w", c.method, err)}
		return
	}
	key := idKey(id)
	s.mu.Lock()
	l := s.listens.open[key]
	if l != nil {
		s.listens.forget(key)
	}
	s.mu.Unlock()
	if l != nil {
		l.end(fmt.Errorf("subscriptions/listen: %w", err))
		l.markClosed()
	}
}
