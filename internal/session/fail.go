package session

import "fmt"

// FailCalls fails every call waiting for its response at once, and every
// later call, with an error wrapping err; the session itself goes on (its
// reader, listens and the child's requests are untouched). The supervisor
// calls it when it stops the child, so that calls in flight end with the
// reason right away instead of at the child's exit, without each call
// registering itself for that (a per-call context.AfterFunc on the child's
// context is a map insert under one lock shared by every call). The first
// err sticks.
func (s *Session) FailCalls(err error) {
	s.mu.Lock()
	if s.failErr == nil {
		s.failErr = err
	}
	err = s.failErr
	pending := s.pending
	s.pending = map[uint64]*call{}
	s.mu.Unlock()
	for _, c := range pending {
		c.ch <- outcome{err: fmt.Errorf("%s: %w", c.method, err)}
	}
}
