package gcpace

import (
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fakePacer is a Pacer on a fake runtime: what it sets is recorded, the
// live heap is *live.
type fakePacer struct {
	*Pacer
	sets        []int
	live        uint64
	at          time.Time
	collections int        // the pacer's own
	timer       *fakeTimer // the last one the pacer made
}

// fakeTimer records what the pacer does with its timer; the test fires it
// with fire.
type fakeTimer struct {
	active bool
	resets int
}

func (t *fakeTimer) Reset(time.Duration) bool {
	t.resets++
	was := t.active
	t.active = true
	return was
}
func (t *fakeTimer) Stop() bool { was := t.active; t.active = false; return was }

// fire is the pacer's last timer firing.
func (f *fakePacer) fire() { f.quietFor(f.timers) }

func newFake(base int, live uint64) *fakePacer {
	f := &fakePacer{live: live, at: time.Unix(1000, 0)}
	f.Pacer = newPacer(base, func(n int) { f.sets = append(f.sets, n) }, func() uint64 { return f.live }, nil)
	f.collect = func() { f.collections++ }
	f.afterFunc = func(time.Duration, func()) timer {
		f.timer = &fakeTimer{active: true}
		return f.timer
	}
	return f
}

// cycles records n collections, each gap after the one before.
func (f *fakePacer) cycles(t *testing.T, n int, gap time.Duration) {
	t.Helper()
	for range n {
		f.at = f.at.Add(gap)
		if !f.collected(f.at) {
			t.Fatal("collected reports the pacer stopped")
		}
	}
}

func (f *fakePacer) want(t *testing.T, percent int, sets ...int) {
	t.Helper()
	if got := f.Percent(); got != percent {
		t.Errorf("percent = %d, want %d", got, percent)
	}
	if len(f.sets) != len(sets) {
		t.Fatalf("sets = %v, want %v", f.sets, sets)
	}
	for i := range sets {
		if f.sets[i] != sets[i] {
			t.Fatalf("sets = %v, want %v", f.sets, sets)
		}
	}
}

func TestPaceRaisesWhenCollectionsComeOften(t *testing.T) {
	f := newFake(100, 4<<20)
	// Seven collections 100 ms apart are not yet RaiseCycles.
	f.cycles(t, RaiseCycles-1, 100*time.Millisecond)
	f.want(t, 100)
	// The eighth: eight within 700 ms.
	f.cycles(t, 1, 100*time.Millisecond)
	f.want(t, 400, 400) // 16 MiB of headroom over 4 MiB live
}

func TestPaceStaysWhenCollectionsAreSpread(t *testing.T) {
	f := newFake(100, 4<<20)
	// Eight collections 150 ms apart take 1.05 s: not raised, however long.
	f.cycles(t, 10*RaiseCycles, 150*time.Millisecond)
	f.want(t, 100)
	// A burst (start-up) between quiet times.
	f.cycles(t, 1, 2*time.Second)
	f.cycles(t, RaiseCycles-2, time.Millisecond)
	f.cycles(t, 5, 2*time.Second)
	f.want(t, 100)
}

func TestPaceLowersWhenCollectionsSpreadOut(t *testing.T) {
	f := newFake(100, 2<<20)
	f.cycles(t, RaiseCycles, 50*time.Millisecond)
	f.want(t, MaxPercent, MaxPercent)
	// At the raised pace, collections 900 ms apart keep it.
	f.cycles(t, 5, 900*time.Millisecond)
	f.want(t, MaxPercent, MaxPercent)
	f.cycles(t, 1, LowerAfter)
	f.want(t, 100, MaxPercent, 100)
	// Raised again only by RaiseCycles collections within RaiseWithin,
	// the one that lowered it the first.
	f.cycles(t, RaiseCycles-2, 50*time.Millisecond)
	f.want(t, 100, MaxPercent, 100)
	f.cycles(t, 1, 50*time.Millisecond)
	f.want(t, MaxPercent, MaxPercent, 100, MaxPercent)
}

func TestPaceLowersWhenNoCollectionComes(t *testing.T) {
	f := newFake(100, 2<<20)
	f.fire() // at the default pace: nothing to do
	f.want(t, 100)
	f.cycles(t, RaiseCycles, 50*time.Millisecond)
	f.want(t, MaxPercent, MaxPercent)
	if f.timer == nil || !f.timer.active {
		t.Fatal("raised without a running timer")
	}
	before := f.timer.resets
	f.cycles(t, 3, 200*time.Millisecond)
	if n := f.timer.resets - before; n != 3 {
		t.Errorf("timer reset %d times by 3 collections, want 3", n)
	}
	// The load ends: the timer fires.
	f.fire()
	f.want(t, 100, MaxPercent, 100)
	if f.collections != 1 {
		t.Errorf("%d collections after the load, want 1", f.collections)
	}
	if f.timer.active {
		t.Error("timer still running at the default pace")
	}
	// A timer that fires late, after a raise and a lowering, does nothing.
	f.fire()
	f.want(t, 100, MaxPercent, 100)
	if f.collections != 1 {
		t.Errorf("%d collections, want still 1", f.collections)
	}
	// Nor does the first raise's timer once a second raise made its own.
	stale := f.timers
	f.cycles(t, RaiseCycles, 50*time.Millisecond)
	f.want(t, MaxPercent, MaxPercent, 100, MaxPercent)
	f.quietFor(stale)
	f.want(t, MaxPercent, MaxPercent, 100, MaxPercent)
}

func TestPaceNearTheHeadroom(t *testing.T) {
	// A live heap a little under Headroom would gain almost nothing.
	f := newFake(100, Headroom*19/20)
	f.cycles(t, 2*RaiseCycles, 10*time.Millisecond)
	f.want(t, 100)
	f.live = Headroom / 2
	f.cycles(t, 1, 10*time.Millisecond)
	f.want(t, 200, 200)
}

func TestPaceFollowsTheLiveHeap(t *testing.T) {
	f := newFake(100, 4<<20)
	f.cycles(t, RaiseCycles, 50*time.Millisecond)
	f.want(t, 400, 400)
	// A small move is not worth a change.
	f.live = 4<<20 + 200<<10
	f.cycles(t, 1, 50*time.Millisecond)
	f.want(t, 400, 400)
	f.live = 8 << 20
	f.cycles(t, 1, 50*time.Millisecond)
	f.want(t, 200, 400, 200)
	// A live heap of Headroom or more has that much at the default pace.
	f.live = 2 * Headroom
	f.cycles(t, 1, 50*time.Millisecond)
	f.want(t, 100, 400, 200, 100)
	f.cycles(t, RaiseCycles, 50*time.Millisecond)
	f.want(t, 100, 400, 200, 100)
}

func TestPaceKeepsAHigherDefault(t *testing.T) {
	// GOGC=1000 set by the user already gives a 4 MiB heap 40 MiB.
	f := newFake(1000, 4<<20)
	f.cycles(t, 2*RaiseCycles, 10*time.Millisecond)
	f.want(t, 1000)
}

func TestPaceStopRestoresTheDefault(t *testing.T) {
	f := newFake(100, 4<<20)
	f.cycles(t, RaiseCycles, 50*time.Millisecond)
	f.Stop()
	f.want(t, 100, 400, 100)
	if f.collected(f.at.Add(time.Millisecond)) {
		t.Error("collected after Stop reports the pacer still runs")
	}
	f.Stop()
	f.want(t, 100, 400, 100)
	var none *Pacer
	none.Stop()
}

// garbage keeps what churn allocates reachable until the next one, so the
// compiler cannot drop the allocations.
var garbage []byte

// churn allocates until done is closed or d passes.
func churn(done <-chan int, d time.Duration) (int, bool) {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		select {
		case n := <-done:
			return n, true
		default:
		}
		for range 64 {
			garbage = make([]byte, 64<<10)
		}
	}
	return 0, false
}

// With the real runtime: allocating fast raises GOGC; Stop brings the
// default back and the collections after it are not looked at.
func TestPacerWithTheRuntime(t *testing.T) {
	base := currentPercent()
	if base <= 0 || base >= MaxPercent {
		t.Skipf("GOGC=%d in the test's environment: nothing to raise", base)
	}
	changes := make(chan int, 64)
	p := Start(func(n int) {
		select {
		case changes <- n:
		default:
		}
	})
	defer p.Stop()
	n, ok := churn(changes, 30*time.Second)
	if !ok {
		t.Fatal("no change of GOGC after 30 s of allocating")
	}
	if n <= base {
		t.Fatalf("first change set GOGC %d, want more than %d", n, base)
	}
	if got := currentPercent(); got <= base {
		t.Errorf("runtime's GOGC = %d after the raise, want more than %d", got, base)
	}
	// The allocations stop: within LowerAfter and a margin, the default.
	deadline := time.Now().Add(LowerAfter + 5*time.Second)
	for p.Percent() != base && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := currentPercent(); got != base {
		t.Fatalf("runtime's GOGC = %d %v after the allocations stopped, want %d", got, LowerAfter+5*time.Second, base)
	}
	// Raised again, then stopped. The lowering's notice may still be on
	// its way (it is sent after the change): wait for it.
	for lowered := false; !lowered; {
		select {
		case n := <-changes:
			lowered = n == base
		case <-time.After(10 * time.Second):
			t.Fatal("no notice of the default pace")
		}
	}
	for len(changes) > 0 {
		<-changes
	}
	if n, ok := churn(changes, 30*time.Second); !ok || n <= base {
		t.Fatalf("no raise on the second load (GOGC %d)", n)
	}
	p.Stop()
	if got := currentPercent(); got != base {
		t.Errorf("runtime's GOGC = %d after Stop, want %d", got, base)
	}
	for len(changes) > 0 {
		<-changes
	}
	churn(nil, 200*time.Millisecond)
	runtime.GC()
	runtime.GC()
	if got := currentPercent(); got != base {
		t.Errorf("runtime's GOGC = %d after collections past Stop, want %d", got, base)
	}
}

func TestStartWithTheCollectorOff(t *testing.T) {
	old := debug.SetGCPercent(-1)
	defer debug.SetGCPercent(old)
	if p := Start(nil); p != nil {
		p.Stop()
		t.Error("Start with GOGC=off returned a pacer")
	}
}
