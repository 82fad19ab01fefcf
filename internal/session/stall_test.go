package session_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// openStalling starts a legacy fake with the given StdinTimeout and a
// session on it (on conn(child) if conn is not nil), and makes the fake
// stop reading its stdin.
func openStalling(t *testing.T, stdinTimeout time.Duration, conn func(*child) session.Conn) (*session.Session, *child) {
	t.Helper()
	c := startChildOpts(t, "legacy,quiet", func(o *transport.Options) { o.StdinTimeout = stdinTimeout })
	var sc session.Conn = c
	if conn != nil {
		sc = conn(c)
	}
	s := session.New(sc, session.Options{Server: "fake", Logger: zaptest.NewLogger(t)})
	t.Cleanup(func() {
		c.kill()
		s.Wait()
	})
	handshake(t, s)
	if got := callTool(t, s, tool("stallstdin", `{}`)); got != "stalled" {
		t.Fatalf("stallstdin = %q", got)
	}
	return s, c
}

// markingConn tells on written when a message containing mark has been
// written whole.
type markingConn struct {
	*child
	mark    string
	written chan struct{} // capacity 1
}

func (c *markingConn) WriteMessage(ctx context.Context, msg []byte) error {
	err := c.child.WriteMessage(ctx, msg)
	if err == nil && strings.Contains(string(msg), c.mark) {
		c.written <- struct{}{}
	}
	return err
}

// echoOf is an echo call whose request is about size bytes.
func echoOf(size int) *session.Request {
	return tool("echo", fmt.Sprintf(`{"message":%q}`, strings.Repeat("x", size)))
}

// A child that stops reading its stdin defeats no deadline: calls whose
// request sits unread in the pipe, calls waiting for room in it and calls
// waiting for those all end at their deadline; then, StdinTimeout after the
// pipe filled up, the child is killed as hung and the calls after say so.
func TestCallsEndAtDeadlineWhenStdinStuck(t *testing.T) {
	const (
		stdinTimeout = 4 * time.Second
		deadline     = 2 * time.Second
		calls        = 12
		// Margin for a loaded machine; a blocked call would take
		// stdinTimeout or for ever.
		margin = 1500 * time.Millisecond
	)
	s, c := openStalling(t, stdinTimeout, nil)

	type result struct {
		err  error
		took time.Duration
	}
	results := make(chan result, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			start := time.Now()
			// 12 × 16 KiB is more than a pipe and the fake's buffer hold.
			_, err := s.Call(ctx, echoOf(16<<10))
			results <- result{err, time.Since(start)}
		})
	}
	wg.Wait()
	close(results)
	for r := range results {
		if !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("Call = %v, want context.DeadlineExceeded", r.err)
		}
		if r.took > deadline+margin {
			t.Errorf("a call returned after %s, deadline %s", r.took, deadline)
		}
	}
	if n := s.Stats().InFlight; n != 0 {
		t.Errorf("InFlight = %d after every call returned, want 0", n)
	}

	select {
	case <-s.Done():
	case <-time.After(stdinTimeout + 20*time.Second):
		t.Fatal("the child whose stdin stayed full was not killed")
	}
	_, err := s.Call(t.Context(), tool("echo", `{"message":"hi"}`))
	if !errors.Is(err, session.ErrClosed) {
		t.Fatalf("Call after the hang = %v, want ErrClosed", err)
	}
	if want := `server "fake" stopped reading its stdin for 4s`; !strings.Contains(err.Error(), want) {
		t.Errorf("Call after the hang = %q, want it to say %q", err, want)
	}
	if !errors.Is(c.Hung(), transport.ErrHung) {
		t.Errorf("Hung() = %v, want ErrHung", c.Hung())
	}
}

// The notifications/cancelled of a call whose request was written is best
// effort: on a full stdin it is given up after CancelWriteTimeout and the
// call returns at its deadline.
func TestCancelOnStuckStdinDoesNotBlock(t *testing.T) {
	const deadline = 1500 * time.Millisecond
	const mark = "written, never read"
	mc := &markingConn{mark: mark, written: make(chan struct{}, 1)}
	s, _ := openStalling(t, time.Hour, func(c *child) session.Conn { mc.child = c; return mc })

	done := make(chan error, 1)
	start := time.Now()
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), deadline)
		defer cancel()
		_, err := s.Call(ctx, tool("echo", fmt.Sprintf(`{"message":%q}`, mark)))
		done <- err
	}()
	<-mc.written
	// A request larger than the pipe is written in part when its
	// deadline comes: the rest goes out first, so the pipe stays busy.
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	_, err := s.Call(ctx, echoOf(512<<10))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call(512 KiB) = %v, want context.DeadlineExceeded", err)
	}

	err = <-done
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call = %v, want context.DeadlineExceeded", err)
	}
	if took := time.Since(start); took > deadline+session.CancelWriteTimeout+time.Second {
		t.Errorf("the call returned after %s: its cancel waited for the child", took)
	}
}
