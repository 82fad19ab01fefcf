package subscriptions

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
)

// refQueue is the queue's documented behaviour written the plain way: one
// slice of entries, linear searches, no index, no reused slots.
type refQueue struct {
	maxEvents, maxBytes int
	evs                 []refEntry
	ended               bool
	stats               QueueStats
}

// refEntry is one queued event, or one the queue makes itself: lagged (the
// terminal one) or a logs-lagged marker.
type refEntry struct {
	ev      *Event // nil for the queue's own events
	kind    Kind   // of the queue's own event
	server  string // of a marker
	dropped uint64 // of a marker
}

func (e refEntry) isLog() bool { return e.ev != nil && e.ev.Kind == KindLog }

func (e refEntry) coalesces() bool { return e.ev != nil && e.ev.coalesces() }

func (r *refQueue) bytes() int {
	n := 0
	for _, e := range r.evs {
		switch {
		case e.ev != nil:
			n += e.ev.size()
		case e.kind == KindLogsLagged:
			n += markerSize(e.server)
		} // lagged: counted by the caller
	}
	return n
}

func (r *refQueue) fits(size int) bool {
	return len(r.evs)+1 <= r.maxEvents && r.bytes()+size <= r.maxBytes
}

// replace: the newest queued event of ev's identity takes ev's content.
func (r *refQueue) replace(ev *Event) bool {
	for i := len(r.evs) - 1; i >= 0; i-- {
		old := r.evs[i]
		if !old.coalesces() || old.ev.identity() != ev.identity() {
			continue
		}
		if r.bytes()-old.ev.size()+ev.size() > r.maxBytes {
			return false
		}
		r.evs[i].ev = ev
		r.stats.Coalesced++
		return true
	}
	return false
}

// compact: every identity that coalesces keeps its oldest position with
// its newest content.
func (r *refQueue) compact() {
	var out []refEntry
	for _, e := range r.evs {
		i := slices.IndexFunc(out, func(o refEntry) bool {
			return e.coalesces() && o.coalesces() && o.ev.identity() == e.ev.identity()
		})
		if i < 0 {
			out = append(out, e)
			continue
		}
		out[i] = e
		r.stats.Coalesced++
	}
	r.evs = out
}

// marker returns the index of server's queued marker, or -1.
func (r *refQueue) marker(server string) int {
	return slices.IndexFunc(r.evs, func(e refEntry) bool { return e.ev == nil && e.kind == KindLogsLagged && e.server == server })
}

// dropOldestLog: the oldest log message goes; its server's marker counts
// it, or takes its place.
func (r *refQueue) dropOldestLog() bool {
	i := slices.IndexFunc(r.evs, refEntry.isLog)
	if i < 0 {
		return false
	}
	r.stats.LogsDropped++
	server := r.evs[i].ev.Server
	if m := r.marker(server); m >= 0 {
		r.evs[m].dropped++
		r.evs = slices.Delete(r.evs, i, i+1)
		return true
	}
	r.evs[i] = refEntry{kind: KindLogsLagged, server: server, dropped: 1}
	return true
}

func (r *refQueue) push(ev *Event) bool {
	if r.ended {
		r.stats.Dropped++
		return false
	}
	switch {
	case ev.terminal():
		r.ended = true
		r.evs = append(r.evs, refEntry{ev: ev})
		return true
	case r.fits(ev.size()):
		r.evs = append(r.evs, refEntry{ev: ev})
		return true
	case ev.coalesces() && r.replace(ev):
		return true
	}
	if ev.coalesces() {
		r.compact()
		if r.replace(ev) {
			return true
		}
	}
	for !r.fits(ev.size()) && r.dropOldestLog() {
	}
	if !r.fits(ev.size()) && !ev.coalesces() {
		r.compact()
	}
	if r.fits(ev.size()) {
		r.evs = append(r.evs, refEntry{ev: ev})
		return true
	}
	if ev.Kind == KindLog {
		if m := r.marker(ev.Server); m >= 0 {
			r.evs[m].dropped++
			r.stats.LogsDropped++
			return true
		}
		if r.fits(markerSize(ev.Server)) {
			r.evs = append(r.evs, refEntry{kind: KindLogsLagged, server: ev.Server, dropped: 1})
			r.stats.LogsDropped++
			return true
		}
	}
	r.stats.Dropped++
	r.stats.Lagged = true
	r.ended = true
	r.evs = append(r.evs, refEntry{kind: KindLagged})
	return true
}

func (r *refQueue) take() []refEntry {
	out := r.evs
	r.evs = nil
	r.stats.Delivered += uint64(len(out))
	return out
}

func (e refEntry) String() string {
	switch {
	case e.ev != nil:
		return describe(e.ev)
	case e.kind == KindLogsLagged:
		return fmt.Sprintf("%s/logs_lagged %d", e.server, e.dropped)
	}
	return "lagged"
}

// matches reports whether the queue handed out ev where the reference has e.
func (e refEntry) matches(ev *Event) bool {
	switch {
	case e.ev != nil:
		return ev == e.ev
	case e.kind == KindLogsLagged:
		return ev.Kind == KindLogsLagged && ev.Server == e.server && ev.LogsDropped == e.dropped
	}
	return ev.Kind == KindLagged
}

func describe(ev *Event) string {
	if ev.Kind == KindLogsLagged {
		return fmt.Sprintf("%s/logs_lagged %d", ev.Server, ev.LogsDropped)
	}
	return fmt.Sprintf("%s/%s/%s %.20s", ev.Server, ev.Kind, ev.URI, ev.Params)
}

// Kinds drawn by randomEvent: a mix, and mostly log messages.
var (
	mixedKinds = []Kind{KindResourceUpdated, KindResourceUpdated, KindToolsListChanged, KindState, KindLog}
	logKinds   = []Kind{KindLog, KindLog, KindLog, KindLog, KindLog, KindLog, KindResourceUpdated, KindToolsListChanged}
)

// randomEvent draws from few identities (so that repeats coalesce) with
// sizes that vary (so that the byte bound and replace's size check bite).
func randomEvent(rng *rand.Rand, seq int, kinds []Kind) *Event {
	ev := &Event{Kind: kinds[rng.IntN(len(kinds))], Server: []string{"a", "b"}[rng.IntN(2)]}
	if ev.Kind == KindResourceUpdated {
		ev.URI = fmt.Sprintf("r://%d", rng.IntN(4))
	}
	ev.Params = fmt.Appendf(nil, `{"seq":%d,"pad":%q}`, seq, strings.Repeat("x", rng.IntN(200)))
	if rng.IntN(400) == 0 {
		ev = &Event{Kind: KindError, Server: ev.Server, Error: fmt.Sprintf("failed at %d", seq)}
	}
	return ev
}

// queueRun drives a queue and its reference with the same operations and
// compares them after each.
type queueRun struct {
	t     *testing.T
	name  string // seed and bounds, for failures
	q     *queue
	ref   *refQueue
	lags  int      // onLag calls
	buf   []*Event // take's buffer, reused
	taken []*Event // a copy of what the last take handed out
}

func (r *queueRun) fail(step int, format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("%s, step %d: %s", r.name, step, fmt.Sprintf(format, args...))
}

// take compares a take with the reference's; it reports the end.
func (r *queueRun) take(step int) bool {
	r.t.Helper()
	var end bool
	r.buf, end = r.q.take(r.buf[:0])
	want := r.ref.take()
	if len(r.buf) != len(want) {
		r.fail(step, "took %d events, want %d", len(r.buf), len(want))
	}
	for i, ev := range r.buf {
		if w := want[i]; !w.matches(ev) {
			r.fail(step, "event %d = %s, want %s", i, describe(ev), w)
		}
	}
	last := len(want) - 1
	if wantEnd := last >= 0 && (want[last].kind == KindLagged || want[last].ev != nil && want[last].ev.terminal()); end != wantEnd {
		r.fail(step, "end = %v, want %v", end, wantEnd)
	}
	if cap(r.q.slots) > maxKeptSlots {
		r.fail(step, "take kept %d slots, want at most %d", cap(r.q.slots), maxKeptSlots)
	}
	r.taken = slices.Clone(r.buf)
	return end
}

// push compares a push, the counters after it, and the buffer the last
// take handed out, which the queue must not touch.
func (r *queueRun) push(step int, ev *Event) {
	r.t.Helper()
	if got, want := r.q.push(ev), r.ref.push(ev); got != want {
		r.fail(step, "push = %v, want %v", got, want)
	}
	if !slices.Equal(r.buf, r.taken) {
		r.fail(step, "a push changed the events take handed out")
	}
	want := r.ref.stats
	want.Queued, want.Bytes = len(r.ref.evs), r.ref.bytes()
	if n := len(r.ref.evs); n > 0 && r.ref.evs[n-1].kind == KindLagged {
		lag := r.q.slots[len(r.q.slots)-1].ev
		if lag.Kind != KindLagged {
			r.fail(step, "last queued event is %v, want lagged", lag.Kind)
		}
		want.Bytes += lag.size()
	}
	if st := r.q.snapshot(); st != want {
		r.fail(step, "stats = %+v, want %+v", st, want)
	}
	if r.lags > 1 || (r.lags == 1) != want.Lagged {
		r.fail(step, "onLag called %d times, lagged %v", r.lags, want.Lagged)
	}
	r.checkIndex(step)
}

// checkIndex: the coalescing index, when built, names the newest slot of
// each identity queued.
func (r *queueRun) checkIndex(step int) {
	r.t.Helper()
	if r.q.latest == nil {
		return
	}
	for i, s := range r.q.slots {
		if s.dead || !s.ev.coalesces() {
			continue
		}
		if j, ok := r.q.latest[s.ev.identity()]; ok && j < i {
			r.fail(step, "index names slot %d for %v, a newer one is at %d", j, s.ev.identity(), i)
		}
	}
	for id, j := range r.q.latest {
		if j >= len(r.q.slots) || r.q.slots[j].dead || r.q.slots[j].ev.identity() != id {
			r.fail(step, "index names slot %d for %v, which holds something else", j, id)
		}
	}
}

// The queue behaves as its plain reference under random pushes and takes:
// the same events in the same order (shared, never copied), the same
// counters, Queued and Bytes equal to what is really queued, a consistent
// index, slots released after a burst, and a buffer handed out by take
// never changed by later pushes.
func TestQueueMatchesReference(t *testing.T) {
	for seed := range uint64(300) {
		rng := rand.New(rand.NewPCG(seed, 7))
		maxEvents, takeOdds := 1+rng.IntN(8), 5 // one step in takeOdds takes
		if seed%4 == 0 {
			// Bursts: many slots are used, then released by take.
			maxEvents, takeOdds = 50+rng.IntN(150), 300
		}
		kinds := mixedKinds
		if seed%3 == 1 {
			kinds = logKinds // log bursts: drops and markers
		}
		maxBytes := 1 << 30
		if rng.IntN(2) == 0 {
			maxBytes = 200 + rng.IntN(1200)
		}
		r := &queueRun{t: t, q: newQueue(maxEvents, maxBytes),
			ref:  &refQueue{maxEvents: maxEvents, maxBytes: maxBytes},
			name: fmt.Sprintf("seed %d (max %d events, %d bytes)", seed, maxEvents, maxBytes)}
		r.q.onLag = func() { r.lags++ }
		for step := range 3000 {
			if rng.IntN(takeOdds) != 0 {
				r.push(step, randomEvent(rng, step, kinds))
			} else if r.take(step) {
				break
			}
		}
	}
}

// Conservation under concurrent publishers and a consumer (run with -race):
// every event pushed is delivered, coalesced, dropped or still queued, and
// the terminal event comes last and only once.
func TestQueueConcurrentAccounting(t *testing.T) {
	q := newQueue(16, 4<<10)
	var lags sync.WaitGroup
	lags.Add(1)
	q.onLag = lags.Done
	const publishers, per = 4, 5000
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(p), 1))
			for i := range per {
				ev := randomEvent(rng, i, [][]Kind{mixedKinds, logKinds}[p%2])
				if ev.terminal() {
					ev = upd("r://x", i) // only the queue may end the stream here
				}
				q.push(ev)
			}
		})
	}
	done := make(chan struct{})
	var taken []*Event
	var consumer sync.WaitGroup
	consumer.Go(func() {
		var buf []*Event
		for {
			select {
			case <-q.ready:
			case <-done:
				buf, _ = q.take(buf[:0])
				taken = append(taken, buf...)
				return
			}
			buf, _ = q.take(buf[:0])
			taken = append(taken, buf...)
			clear(buf)
		}
	})
	wg.Wait()
	close(done)
	consumer.Wait()
	st := q.snapshot()
	terminals, markers, counted := 0, uint64(0), uint64(0)
	for i, ev := range taken {
		if ev.Kind == KindLogsLagged {
			markers++
			counted += ev.LogsDropped
		}
		if ev.terminal() {
			terminals++
			if i != len(taken)-1 {
				t.Fatalf("terminal event at %d of %d", i, len(taken))
			}
		}
	}
	if terminals > 1 || st.Lagged != (terminals == 1) {
		t.Fatalf("%d terminal events, stats %+v", terminals, st)
	}
	if st.Lagged {
		lags.Wait() // onLag ran exactly once (a second Done would panic)
	}
	lagEvents := uint64(terminals)
	if got := st.Delivered - markers - lagEvents + st.Coalesced + st.Dropped + st.LogsDropped + uint64(st.Queued); got != publishers*per {
		t.Fatalf("delivered+coalesced+dropped+logs dropped+queued = %d, want the %d pushed (stats %+v)", got, publishers*per, st)
	}
	if st.Queued != 0 || counted != st.LogsDropped {
		t.Fatalf("markers count %d dropped log messages, stats %+v", counted, st)
	}
	if st.Delivered != uint64(len(taken)) {
		t.Fatalf("delivered = %d, took %d", st.Delivered, len(taken))
	}
}
