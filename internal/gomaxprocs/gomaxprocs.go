// Package gomaxprocs sets how many threads run the daemon's Go code
// (GOMAXPROCS): few while calls come one at a time, which costs the least
// CPU per call, and all of them while many calls are in flight at once or
// an event goes out to many apps, which is when more threads add throughput.
//
// Why few: a relayed call hands off between goroutines several times (the
// gRPC reader, the handler, the child's pipe, the session's reader, the
// handler again, the gRPC writer). With a thread idle, every hand-off
// wakes it to look for work and sleep again: on 2 CPUs those futex calls
// and the scheduler were a quarter of mcpd's CPU per call, and one thread
// cut its CPU per call to 0.70-0.85x. With many calls in flight, or a
// notification fanned out to a hundred apps, the other threads have work
// to find: one thread made such a fan-out's p99 twice as long.
package gomaxprocs

import (
	"context"
	"runtime"
	"sync/atomic"
	"time"
)

// BusyCalls is how many calls in flight at once make the governor use
// every thread.
const BusyCalls = 4

// After quietWindows windows in a row with fewer than BusyCalls in flight
// at their peak, the governor goes back to its low count.
const (
	window       = 250 * time.Millisecond
	quietWindows = 4
)

// Governor moves GOMAXPROCS between low and high with the calls in flight.
// Enter and Exit are safe for concurrent use; Run owns the changes.
type Governor struct {
	low, high int

	inflight atomic.Int64
	peak     atomic.Int64  // most calls in flight since Run last looked
	atHigh   atomic.Bool   // GOMAXPROCS is high
	busy     chan struct{} // capacity 1: a call found BusyCalls in flight at low

	set func(int) // runtime.GOMAXPROCS; replaced in tests
}

// New returns a governor between low and high threads (low ≥ 1, high ≥
// low), and sets GOMAXPROCS to low.
func New(low, high int) *Governor {
	low = max(1, low)
	g := &Governor{low: low, high: max(low, high), busy: make(chan struct{}, 1),
		set: func(n int) { runtime.GOMAXPROCS(n) }}
	g.set(low)
	return g
}

// Enter records a call starting.
func (g *Governor) Enter() {
	n := g.inflight.Add(1)
	g.raisePeak(n)
	if n >= BusyCalls {
		g.wake()
	}
}

// wake tells Run that many things run at once, if it is at low.
func (g *Governor) wake() {
	if !g.atHigh.Load() {
		select {
		case g.busy <- struct{}{}:
		default:
		}
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
	g.raisePeak(int64(streams))
	g.wake()
}

// raisePeak makes peak at least n.
func (g *Governor) raisePeak(n int64) {
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
}

// Run changes GOMAXPROCS until ctx ends: to high as soon as a call finds
// BusyCalls in flight, back to low after a second of fewer. At low it
// sleeps until then; it ticks only while at high.
func (g *Governor) Run(ctx context.Context) {
	if g.low == g.high {
		return
	}
	tick := time.NewTicker(window)
	tick.Stop()
	defer tick.Stop()
	quiet := 0
	for {
		if !g.atHigh.Load() {
			select {
			case <-ctx.Done():
				return
			case <-g.busy:
			}
			g.set(g.high)
			g.atHigh.Store(true)
			g.peak.Store(g.inflight.Load())
			quiet = 0
			tick.Reset(window)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if g.peak.Swap(g.inflight.Load()) >= BusyCalls {
			quiet = 0
			continue
		}
		if quiet++; quiet >= quietWindows {
			tick.Stop()
			g.atHigh.Store(false)
			g.set(g.low)
			// A call may have found many in flight just before the flag
			// fell and sent nothing: look again.
			if g.inflight.Load() >= BusyCalls {
				g.wake()
			}
		}
	}
}
