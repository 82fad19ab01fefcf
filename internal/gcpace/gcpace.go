// Package gcpace lets the daemon's heap grow further between garbage
// collections while the collector runs many times a second, and brings
// the default back, with a collection that returns the memory, once three
// seconds pass without one.
//
// Why: relaying calls as fast as a child answers them, mcpd allocates tens
// of MB a second over a live heap of 2-4 MiB. With Go's default pace
// (GOGC=100: collect when the heap has doubled) that is a collection every
// 50 ms, and on 2 CPUs mcpd's CPU per call was 1.10-1.22x the bare relay's
// at 64 apps calling server-everything; with the heap allowed to grow by
// 16 MiB it was 0.94-0.98x (BENCHMARKS.md, "The collector's pace under load").
// An idle daemon, or one serving calls one at a time, keeps the default,
// so its footprint is unchanged; after a load, the heap is collected and
// the memory returned within LowerAfter.
//
// How: a sentinel object's finalizer runs after each collection, looks at
// how soon it came after the ones before, sets the pace
// (debug.SetGCPercent) and arms the next sentinel. At the default pace
// nothing runs between collections: no goroutine, no timer. At the raised
// pace a timer, reset by each collection, fires when none came for
// LowerAfter: the load is over, and the pacer sets the default and
// collects.
package gcpace

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// RaiseCycles collections in a row within RaiseWithin raise the pace; at
// the raised pace, LowerAfter without a collection brings the default
// back. At the default pace the heap grows by the live heap between
// collections and at the raised one by Headroom, so an allocation rate
// that raised the pace keeps it while it stays above a few MB a second.
// LowerAfter is long enough that a load with pauses of a second or two
// (an agent's bursts of calls) keeps the raised pace through them.
const (
	RaiseCycles = 8
	RaiseWithin = time.Second
	LowerAfter  = 3 * time.Second
)

// Headroom is how far the heap may grow past the live heap between
// collections at the raised pace, and MaxPercent the most GOGC it takes
// (a live heap of Headroom/8 or less gets 8x). A live heap of Headroom or
// more already has that much at the default pace and is left to it.
const (
	Headroom   = 16 << 20
	MaxPercent = 800
)

// Pacer sets the collector's pace from how often it runs. Its methods are
// safe for concurrent use.
type Pacer struct {
	base    int               // GOGC at Start, the default pace
	set     func(percent int) // debug.SetGCPercent; replaced in tests
	live    func() uint64     // the live heap after the last collection; replaced in tests
	notify  func(percent int) // told of each change; may be nil
	collect func()            // debug.FreeOSMemory; replaced in tests
	// afterFunc is time.AfterFunc; replaced in tests.
	afterFunc func(time.Duration, func()) timer

	collecting sync.WaitGroup // quietFor's collections in progress

	mu      sync.Mutex             // guards following
	ends    [RaiseCycles]time.Time // the last collections' ends, a ring; next is the oldest
	next    int
	percent int   // GOGC now
	quiet   timer // while raised: fires LowerAfter after the last collection
	timers  int   // timers made; quietFor acts only for the last
	stopped bool
}

// timer is what the pacer uses of a *time.Timer.
type timer interface {
	Reset(time.Duration) bool
	Stop() bool
}

// Start sets the pace from now on; notify (may be nil) is told each new
// GOGC. It returns nil, doing nothing, when the collector is off (GOGC=off).
func Start(notify func(percent int)) *Pacer {
	base := currentPercent()
	if base <= 0 {
		return nil
	}
	p := newPacer(base, func(percent int) { debug.SetGCPercent(percent) }, liveHeap, notify)
	p.collect = debug.FreeOSMemory
	p.afterFunc = func(d time.Duration, f func()) timer { return time.AfterFunc(d, f) }
	p.arm()
	return p
}

func newPacer(base int, set func(int), live func() uint64, notify func(int)) *Pacer {
	return &Pacer{base: base, set: set, live: live, notify: notify, percent: base}
}

// Stop restores the default pace; the sentinel armed last is not re-armed.
// Stop on a nil Pacer does nothing.
func (p *Pacer) Stop() {
	if p == nil {
		return
	}
	defer p.collecting.Wait()
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return
	}
	p.stopped = true
	changed := p.change(p.base)
	p.mu.Unlock()
	p.announce(changed, p.base)
}

// Percent is the GOGC the pacer set last (the default pace until a raise;
// 0 for a nil Pacer).
func (p *Pacer) Percent() int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.percent
}

// sentinel is garbage from the moment it is armed; its size keeps it out
// of the tiny allocator, whose shared blocks could keep it alive.
type sentinel struct{ _ [32]byte }

// arm allocates a sentinel whose finalizer, after the collection that
// finds it, records that collection and arms the next.
func (p *Pacer) arm() {
	runtime.SetFinalizer(new(sentinel), func(*sentinel) {
		if p.collected(time.Now()) {
			p.arm()
		}
	})
}

// collected records a collection that ended at now and sets the pace; it
// reports whether the pacer still runs.
func (p *Pacer) collected(now time.Time) bool {
	p.mu.Lock()
	if p.stopped {
		p.mu.Unlock()
		return false
	}
	last := p.ends[(p.next+RaiseCycles-1)%RaiseCycles]
	p.ends[p.next] = now
	p.next = (p.next + 1) % RaiseCycles
	// RaiseCycles-1 collections before this one; zero until there were.
	oldest := p.ends[p.next]

	raised := p.percent != p.base
	changed := false
	switch {
	case raised && now.Sub(last) >= LowerAfter:
		changed = p.change(p.base) // the timer was late
	case raised || (!oldest.IsZero() && now.Sub(oldest) <= RaiseWithin):
		// Follow the live heap while raised, so the headroom stays Headroom.
		changed = p.change(raisedPercent(p.base, p.live()))
	}
	if p.quiet != nil {
		p.quiet.Reset(LowerAfter)
	}
	percent := p.percent
	p.mu.Unlock()
	p.announce(changed, percent)
	return true
}

// quietFor is the raised pace's timer (the gen'th the pacer made): no
// collection came for LowerAfter. It sets the default pace, collects the
// heap grown under it and returns the freed memory to the system
// (debug.FreeOSMemory), so that mcpd's RSS is back within LowerAfter of
// the load's end.
func (p *Pacer) quietFor(gen int) {
	p.mu.Lock()
	if p.stopped || p.percent == p.base || gen != p.timers {
		p.mu.Unlock() // stopped, lowered, or a timer since replaced
		return
	}
	changed := p.change(p.base)
	p.collecting.Add(1)
	p.mu.Unlock()
	defer p.collecting.Done()
	p.announce(changed, p.base)
	p.collect()
}

// announce tells notify of a new pace, outside mu: it runs on the
// runtime's finalizer goroutine, which a slow notify must not hold with
// the lock.
func (p *Pacer) announce(changed bool, percent int) {
	if changed && p.notify != nil {
		p.notify(percent)
	}
}

// raisedPercent is the GOGC that lets the heap grow by Headroom past live,
// at most MaxPercent; base when that is not a tenth more than base (a live
// heap near Headroom), so that the pace does not flap over nothing.
func raisedPercent(base int, live uint64) int {
	if live == 0 {
		return MaxPercent
	}
	percent := int(min(uint64(Headroom)*100/live, MaxPercent))
	if 10*percent < 11*base {
		return base
	}
	return percent
}

// change sets GOGC to percent and reports whether it did. Between two
// raised paces it keeps the current one unless they differ by a tenth or
// more (the live heap moves a little every collection).
func (p *Pacer) change(percent int) bool {
	if percent == p.percent {
		return false
	}
	if percent != p.base && p.percent != p.base && 10*abs(percent-p.percent) < p.percent {
		return false
	}
	switch {
	case percent == p.base && p.quiet != nil:
		p.quiet.Stop()
		p.quiet = nil
	case percent != p.base && p.quiet == nil && p.afterFunc != nil:
		p.timers++
		gen := p.timers
		p.quiet = p.afterFunc(LowerAfter, func() { p.quietFor(gen) })
	}
	p.percent = percent
	p.set(percent)
	return true
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// currentPercent is GOGC as the runtime has it (negative when off).
func currentPercent() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 100
	}
	v := s[0].Value.Uint64()
	if v > 1<<30 { // off reads as a huge value
		return -1
	}
	return int(v)
}

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}
