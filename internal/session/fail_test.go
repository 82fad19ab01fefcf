package session_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/session"
)

// FailCalls ends the calls in flight at once with its error, and every
// later call; the first error sticks; the session itself stays up.
func TestFailCalls(t *testing.T) {
	s, c := open(t, "modern", session.Options{})
	handshake(t, s)
	const n = 2
	errs := make(chan error, n)
	for range n {
		go func() {
			// No deadline: only FailCalls can end these calls.
			_, err := s.Call(context.Background(), tool("sleep", `{"ms":600000}`))
			errs <- err
		}()
	}
	for i := 2; i < 2+n; i++ {
		c.waitStderr(fmt.Sprintf("recv tools/call %d", i))
	}
	stopped := errors.New("server stopped by the operator")
	s.FailCalls(stopped)
	s.FailCalls(errors.New("a later reason"))
	for range n {
		if err := <-errs; !errors.Is(err, stopped) {
			t.Errorf("call in flight = %v, want %v", err, stopped)
		}
	}
	if _, err := s.Call(context.Background(), tool("echo", `{"message":"late"}`)); !errors.Is(err, stopped) {
		t.Errorf("later call = %v, want %v", err, stopped)
	}
	if st := s.Stats(); st.InFlight != 0 {
		t.Errorf("in flight = %d, want 0", st.InFlight)
	}
	select {
	case <-s.Done():
		t.Error("the session ended, want it running")
	default:
	}
}
