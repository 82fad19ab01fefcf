package session_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/session"
)

// A response line longer than the child's MaxLineSize (64 KiB in these
// tests) fails its call at once with ErrResponseTooLarge naming the limit;
// the call leaves the pending map and the session serves the next call.
func TestOversizeResponseFailsCall(t *testing.T) {
	for _, mode := range []string{"modern", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			s, c := open(t, mode, session.Options{})
			handshake(t, s)
			// Far beyond the time the call needs: without the failure it
			// would end only here.
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, err := s.Call(ctx, tool("big", `{"bytes":100000}`))
			if !errors.Is(err, session.ErrResponseTooLarge) {
				t.Fatalf("Call = %v, want ErrResponseTooLarge", err)
			}
			if msg := err.Error(); !strings.Contains(msg, "maxLineSize is 65536 bytes") ||
				!strings.Contains(msg, "raise maxLineSize") {
				t.Errorf("error %q does not name the limit and how to raise it", msg)
			}
			if st := s.Stats(); st.InFlight != 0 {
				t.Errorf("in flight = %d, want 0", st.InFlight)
			}
			if n := c.Stats().LinesOversize; n != 1 {
				t.Errorf("oversize lines = %d, want 1", n)
			}
			if got := callTool(t, s, tool("echo", `{"message":"after"}`)); got != "after" {
				t.Errorf("next call = %q, want %q", got, "after")
			}
		})
	}
}

// When "result" comes before "id", the kept start of the line does not
// show the id: the call ends at its deadline as before, and the session
// stays usable.
func TestOversizeResponseResultFirst(t *testing.T) {
	s, c := open(t, "modern", session.Options{})
	handshake(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := s.Call(ctx, tool("big", `{"bytes":100000,"resultfirst":true}`))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, session.ErrResponseTooLarge) {
		t.Fatalf("Call = %v, want context.DeadlineExceeded", err)
	}
	if n := c.Stats().LinesOversize; n != 1 {
		t.Errorf("oversize lines = %d, want 1", n)
	}
	if got := callTool(t, s, tool("echo", `{"message":"after"}`)); got != "after" {
		t.Errorf("next call = %q, want %q", got, "after")
	}
}
