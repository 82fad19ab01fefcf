package gomaxprocs

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder stands in for runtime.GOMAXPROCS.
type recorder struct{ ch chan int }

func (r *recorder) set(n int) { r.ch <- n }

func (r *recorder) next(t *testing.T, want int) {
	t.Helper()
	select {
	case n := <-r.ch:
		if n != want {
			t.Fatalf("GOMAXPROCS set to %d, want %d", n, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("GOMAXPROCS not set to %d", want)
	}
}

// runGovernor runs a governor between 1 and 2 threads until the test
// ends, its GOMAXPROCS changes recorded rather than made (after New's).
func runGovernor(t *testing.T) (*Governor, *recorder) {
	t.Helper()
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	g := New(1, 2)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("New set GOMAXPROCS to %d, want the low 1", n)
	}
	r := &recorder{ch: make(chan int, 8)}
	g.set = r.set
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { // owned: waited for in the cleanup
		defer close(done)
		g.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return g, r
}

func TestGovernorFollowsTheCallsInFlight(t *testing.T) {
	g, r := runGovernor(t)

	for range BusyCalls - 1 {
		g.Enter()
	}
	select {
	case n := <-r.ch:
		t.Fatalf("set to %d with %d calls in flight", n, BusyCalls-1)
	case <-time.After(300 * time.Millisecond):
	}
	g.Enter() // BusyCalls in flight
	r.next(t, 2)

	// Still busy for a while: stays high.
	select {
	case n := <-r.ch:
		t.Fatalf("set to %d while still busy", n)
	case <-time.After(2 * quietWindows * window):
	}
	for range BusyCalls {
		g.Exit()
	}
	start := time.Now()
	r.next(t, 1)
	if d := time.Since(start); d < (quietWindows-1)*window {
		t.Errorf("back to low after %v, want about %v of quiet", d, quietWindows*window)
	}

	// Busy again: high again.
	for range BusyCalls {
		g.Enter()
	}
	r.next(t, 2)
}

func TestGovernorWithOneCountDoesNothing(t *testing.T) {
	before := runtime.GOMAXPROCS(0)
	defer runtime.GOMAXPROCS(before)
	g := New(2, 2)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	g.Run(ctx) // returns at once
	for range 2 * BusyCalls {
		g.Enter()
	}
	if n := runtime.GOMAXPROCS(0); n != 2 {
		t.Fatalf("GOMAXPROCS = %d, want 2", n)
	}
}

// An event fanned out to many apps counts as that many calls at once.
func TestGovernorFanOut(t *testing.T) {
	g, r := runGovernor(t)
	g.FanOut(BusyCalls - 1)
	select {
	case n := <-r.ch:
		t.Fatalf("set to %d after a fan-out to %d", n, BusyCalls-1)
	case <-time.After(300 * time.Millisecond):
	}
	g.FanOut(100)
	r.next(t, 2)
	r.next(t, 1) // nothing more: back to low
}
