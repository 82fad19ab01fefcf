package gomaxprocs

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
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

// quietFor fails the test if GOMAXPROCS is set within d.
func (r *recorder) quietFor(t *testing.T, d time.Duration, why string) {
	t.Helper()
	select {
	case n := <-r.ch:
		t.Fatalf("set to %d %s", n, why)
	case <-time.After(d):
	}
}

// fakeCPU stands in for the process's CPU time: a clock that runs at a
// share of the wall clock the test sets.
type fakeCPU struct {
	reads atomic.Int64 // calls of now

	mu    sync.Mutex // guards the fields below
	rate  float64
	since time.Time
	spent time.Duration // before since
}

func newFakeCPU(rate float64) *fakeCPU { return &fakeCPU{rate: rate, since: time.Now()} }

func (c *fakeCPU) now() time.Duration {
	c.reads.Add(1)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.spent + time.Duration(c.rate*float64(time.Since(c.since)))
}

func (c *fakeCPU) setRate(rate float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.spent += time.Duration(c.rate * float64(now.Sub(c.since)))
	c.rate, c.since = rate, now
}

// runGovernor runs a governor between 1 and 2 threads until the test
// ends, its GOMAXPROCS changes recorded rather than made (after New's),
// with mcpd's CPU use busy: a full thread.
func runGovernor(t *testing.T) (*Governor, *recorder) {
	t.Helper()
	return runGovernorCPU(t, newFakeCPU(1))
}

// runGovernorCPU is runGovernor with the process's CPU time from cpu.
func runGovernorCPU(t *testing.T, cpu *fakeCPU) (*Governor, *recorder) {
	t.Helper()
	before := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(before) })
	g := New(1, 2)
	if n := runtime.GOMAXPROCS(0); n != 1 {
		t.Fatalf("New set GOMAXPROCS to %d, want the low 1", n)
	}
	r := &recorder{ch: make(chan int, 8)}
	g.set = r.set
	g.cpu = cpu.now
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
	r.quietFor(t, 2*window, "with fewer than BusyCalls in flight")
	g.Enter() // BusyCalls in flight
	r.next(t, 2)

	// Still busy for a while: stays high.
	r.quietFor(t, 2*quietWindows*window, "while still busy")
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

// An event fanned out to many apps raises the count at once, whatever
// the CPU.
func TestGovernorFanOut(t *testing.T) {
	g, r := runGovernorCPU(t, newFakeCPU(0))
	g.FanOut(BusyCalls - 1)
	r.quietFor(t, 2*window, "after a fan-out to fewer than BusyCalls apps")
	g.FanOut(100)
	r.next(t, 2)

	// Fan-outs that go on keep it high.
	stop := time.Now().Add(2 * quietWindows * window)
	for time.Now().Before(stop) {
		g.FanOut(100)
		select {
		case n := <-r.ch:
			t.Fatalf("set to %d while events go to 100 apps", n)
		case <-time.After(window / 5):
		}
	}
	r.next(t, 1) // nothing more: back to low
	r.quietFor(t, 2*window, "with no fan-out pending")
}

// Many calls in flight that keep mcpd's thread mostly idle (a slow
// server) leave it at the low count; as they come to fill it, the count
// goes up, and down again when they take less than busyShare.
func TestGovernorFollowsTheCPUOfTheCalls(t *testing.T) {
	g, r, cpu := runLightCalls(t)
	r.quietFor(t, 4*window, "with 16 calls in flight taking a tenth of a thread")

	cpu.setRate(0.8)
	r.next(t, 2)
	r.quietFor(t, 2*quietWindows*window, "while 16 calls take 0.8 of a thread")

	cpu.setRate(0.2)
	start := time.Now()
	r.next(t, 1)
	if d := time.Since(start); d < (quietWindows-1)*window {
		t.Errorf("back to low after %v, want about %v below the share", d, quietWindows*window)
	}
	r.quietFor(t, 4*window, "while 16 calls take 0.2 of a thread")

	cpu.setRate(0)
	for range 16 {
		g.Exit()
	}
	r.quietFor(t, 2*window, "with nothing in flight")
}

// runLightCalls runs a governor with 16 calls in flight taking a tenth of
// a thread; it skips the test where the CPU time is not measured.
func runLightCalls(t *testing.T) (*Governor, *recorder, *fakeCPU) {
	t.Helper()
	if !cpuMeasured {
		t.Skip("the process's CPU time is not measured here: calls in flight alone move the count")
	}
	cpu := newFakeCPU(0.1)
	g, r := runGovernorCPU(t, cpu)
	for range 16 {
		g.Enter()
	}
	return g, r, cpu
}

// Calls that stay in flight at a low share are watched in windows that
// grow to maxLowWindow, not every lowWindow.
func TestGovernorWatchesLightCallsRarely(t *testing.T) {
	_, r, cpu := runLightCalls(t)
	const watched = 3 * time.Second
	r.quietFor(t, watched, "with 16 calls in flight taking a tenth of a thread")
	// Two reads a window: 50+100+...+800 ms and then 1 s windows make
	// about 7 windows in 3 s; 50 ms windows would make 60.
	if n := cpu.reads.Load(); n > 2*12 {
		t.Errorf("%d reads of the CPU time in %v, want windows growing to %v", n, watched, maxLowWindow)
	}
}
