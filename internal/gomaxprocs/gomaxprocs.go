// Package gomaxprocs sets how many threads run the daemon's Go code
// (GOMAXPROCS): few while calls come one at a time or mcpd has little to
// do per second, which costs the least CPU per call, and all of them while
// many calls are in flight and mcpd keeps its few threads busy, or an
// event goes out to many apps, which is when more threads add throughput.
//
// Why few: a relayed call hands off between goroutines several times (the
// gRPC reader, the handler, the child's pipe, the session's reader, the
// handler again, the gRPC writer). With a thread idle, every hand-off
// wakes it to look for work and sleep again: on 2 CPUs those futex calls
// and the scheduler were a quarter of mcpd's CPU per call, and one thread
// cut its CPU per call to 0.70-0.85x.
//
// Why not all as soon as calls overlap: many calls in flight to a slow
// server leave mcpd's threads mostly idle, waiting for the child; more
// threads then only spin and wake, taking CPU from the child, and the
// calls get slower (on 2 CPUs, 16 apps calling the Go demo server: 6.1-6.5k
// calls/s with one thread, 4.9-6.1k with two). With a fast server mcpd
// itself is the bottleneck, and two threads carry 10-17% more. So calls in
// flight raise the count only while mcpd's CPU time fills half of its
// low threads (busyShare). An event fanned out to many apps raises it at
// once: one thread made a fan-out to 100 apps' p99 twice as long.
package gomaxprocs

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// BusyCalls is how many calls in flight at once let the governor use
// every thread.
const BusyCalls = 4

// Calls in flight raise the count when, over a window at the low count,
// mcpd's CPU time was at least busyShare of the low threads' time, and
// keep it up while it stays so. The same calls take a larger share at the
// high count (its wake-ups), so a load that raised the count keeps it, and
// one that lowered it stays low. Measured on 2 CPUs with one thread low
// (BENCHMARKS.md, "Threads by the CPU of the calls"): 16 and 64 apps
// calling the demo server took 0.23-0.46 of a CPU at one thread and
// 0.31-0.47 at two; server-everything, which answers three times as fast,
// 0.52-0.76 at one and 0.6-0.99 at two.
const busyShare = 0.5

// At the low count the first window is lowWindow (window right after a
// fall), so that a burst of calls gets the threads within tens of
// milliseconds; while the calls take less than busyShare, each window is
// twice the last, up to maxLowWindow. After quietWindows windows of window
// in a row at the high count without BusyCalls in flight at busyShare, or
// a fan-out, the count goes back down.
const (
	lowWindow    = 50 * time.Millisecond
	maxLowWindow = time.Second
	window       = 250 * time.Millisecond
	quietWindows = 4
)

// Governor moves GOMAXPROCS between low and high with the calls in flight
// and the CPU they take. Enter, Exit and FanOut are safe for concurrent use;
// Run owns the changes.
type Governor struct {
	low, high int

	inflight atomic.Int64
	peak     atomic.Int64  // most calls in flight since Run last looked
	fanned   atomic.Bool   // an event went to BusyCalls apps or more since Run last looked
	atHigh   atomic.Bool   // GOMAXPROCS is high
	busy     chan struct{} // capacity 1: a call found BusyCalls in flight at low
	fanOut   chan struct{} // capacity 1: an event went to many apps at low

	set func(int)            // runtime.GOMAXPROCS; replaced in tests
	cpu func() time.Duration // the process's CPU time so far; replaced in tests
}

// New returns a governor between low and high threads (low ≥ 1, high ≥
// low), and sets GOMAXPROCS to low.
func New(low, high int) *Governor {
	low = max(1, low)
	g := &Governor{low: low, high: max(low, high),
		busy: make(chan struct{}, 1), fanOut: make(chan struct{}, 1),
		set: func(n int) { runtime.GOMAXPROCS(n) }, cpu: processCPU}
	g.set(low)
	return g
}

// Enter records a call starting.
func (g *Governor) Enter() {
	n := g.inflight.Add(1)
	g.raisePeak(n)
	if n >= BusyCalls && !g.atHigh.Load() {
		signal(g.busy)
	}
}

// Exit records a call ending.
func (g *Governor) Exit() { g.inflight.Add(-1) }

// FanOut records an event queued for streams apps at once: their sends
// run in parallel like as many calls.
func (g *Governor) FanOut(streams int) {
	if streams < BusyCalls {
		return
	}
	g.fanned.Store(true)
	if !g.atHigh.Load() {
		signal(g.fanOut)
	}
}

// signal sends on a channel of capacity 1 unless a send is pending.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// resetPeak starts a window's peak at the calls in flight now, and returns
// the last window's. (Storing the count would undo an Enter's raise made
// between the load and the store.)
func (g *Governor) resetPeak() int64 {
	last := g.peak.Swap(0)
	g.raisePeak(g.inflight.Load())
	return last
}

// raisePeak makes peak at least n.
func (g *Governor) raisePeak(n int64) {
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

// Run changes GOMAXPROCS until ctx ends: to high at once on a fan-out to
// many apps, or after a window at low with BusyCalls in flight that took
// busyShare of the low threads; back to low after quietWindows windows
// with neither. It sleeps while fewer than BusyCalls are in flight at low.
func (g *Governor) Run(ctx context.Context) {
	if g.low == g.high {
		return
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	// first is the first window of the next watch at low: lowWindow after
	// an idle spell, window right after a fall, so that the noise of one
	// short window does not raise a load that was just found light.
	first := lowWindow
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.fanOut:
		case <-g.busy:
			if !g.watchLow(ctx, t, first) {
				first = lowWindow
				g.resignal() // what Enter sent during the watch is stale
				continue
			}
		}
		if ctx.Err() != nil {
			return
		}
		// This rise serves the signals sent until the flag is up.
		g.atHigh.Store(true)
		drain(g.busy)
		drain(g.fanOut)
		g.set(g.high)
		if !g.stayHigh(ctx, t) {
			return
		}
		g.atHigh.Store(false)
		g.set(g.low)
		first = window
		// Signals sent while the count was high are stale, and a call or a
		// fan-out may have come just before the flag fell and sent nothing.
		g.resignal()
	}
}

// resignal drops the pending signals and sends again what holds now:
// BusyCalls in flight, or an event to many apps since the last rise.
// (fanned is cleared only at a rise, and a fan-out at low raises.)
func (g *Governor) resignal() {
	drain(g.busy)
	drain(g.fanOut)
	if g.inflight.Load() >= BusyCalls {
		signal(g.busy)
	}
	if g.fanned.Load() {
		signal(g.fanOut)
	}
}

// drain takes a pending signal, if any.
func drain(ch chan struct{}) {
	select {
	case <-ch:
	default:
	}
}

// watchLow watches the low count, a window at a time, while BusyCalls are
// in flight: true as soon as a window had them and took busyShare of the
// low threads, or an event went to many apps; false when a window had
// fewer in flight at its peak, or ctx ended. The windows grow from first
// to maxLowWindow while the calls take less, so that calls waiting on a
// slow server cost few wake-ups.
func (g *Governor) watchLow(ctx context.Context, t *time.Timer, first time.Duration) bool {
	for wait := first; ; wait = min(2*wait, maxLowWindow) {
		g.resetPeak()
		start := g.sample()
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return false
		case <-g.fanOut:
			return true
		case <-t.C:
		}
		share, _ := g.shareSince(start)
		switch {
		case g.peak.Load() < BusyCalls:
			return false
		case share >= busyShare:
			return true
		}
	}
}

// stayHigh keeps the high count until quietWindows windows in a row had
// neither BusyCalls in flight at busyShare of the low threads nor a
// fan-out to many apps; false when ctx ended first.
func (g *Governor) stayHigh(ctx context.Context, t *time.Timer) bool {
	g.fanned.Store(false)
	g.resetPeak()
	last := g.sample()
	for quiet := 0; quiet < quietWindows; {
		t.Reset(window)
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		var share float64
		share, last = g.shareSince(last)
		fanned := g.fanned.Swap(false)
		calls := g.resetPeak() >= BusyCalls && share >= busyShare
		if fanned || calls {
			quiet = 0
		} else {
			quiet++
		}
	}
	return true
}

// cpuSample is the process's CPU time at a moment.
type cpuSample struct {
	cpu time.Duration
	at  time.Time
}

func (g *Governor) sample() cpuSample { return cpuSample{g.cpu(), time.Now()} }

// shareSince returns the process's CPU time since s as a share of the low
// threads' time since then (+Inf where the CPU time is not measured), and
// the sample it took to tell.
func (g *Governor) shareSince(s cpuSample) (float64, cpuSample) {
	now := g.sample()
	if !cpuMeasured {
		return math.Inf(1), now
	}
	elapsed := now.at.Sub(s.at)
	if elapsed <= 0 {
		return 0, now
	}
	return float64(max(0, now.cpu-s.cpu)) / float64(elapsed) / float64(g.low), now
}
