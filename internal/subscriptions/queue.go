package subscriptions

import "sync"

// Default bounds of an app stream's queue.
const (
	DefaultQueueEvents = 1024
	DefaultQueueBytes  = 8 << 20
)

// identity is what makes two queued events repeats of one another.
type identity struct {
	server string
	kind   Kind
	uri    string
}

// slot is one queued event. Events are shared, read-only, by every queue
// they were pushed to.
type slot struct {
	ev   *Event
	size int
	dead bool // merged into an earlier slot of the same identity by compaction
}

func (ev *Event) identity() identity { return identity{ev.Server, ev.Kind, ev.URI} }

// QueueStats are the counters of one queue.
type QueueStats struct {
	// Queued is how many events wait now; Bytes their estimated size.
	Queued int
	Bytes  int
	// Delivered counts events handed to the app.
	Delivered uint64
	// Coalesced counts events merged into a queued event of the same
	// identity because the queue was full.
	Coalesced uint64
	// Dropped counts events discarded because the stream had ended
	// (lagged, failed or closed).
	Dropped uint64
	// Lagged is true once the queue overflowed.
	Lagged bool
}

// queue is a bounded, coalescing, non-blocking event queue. push never
// blocks; the consumer waits on ready and takes everything queued. In the
// steady state (the app keeps up) neither push nor take allocates.
type queue struct {
	maxEvents, maxBytes int
	ready               chan struct{} // capacity 1: "something is queued"

	mu    sync.Mutex // guards the fields below
	slots []slot
	live  int // slots not dead
	bytes int
	// latest indexes the newest live slot of each identity, for coalescing;
	// it is built when the queue first fills up and dropped by take.
	latest map[identity]int
	ended  bool // a terminal event was queued, or closed
	stats  QueueStats

	// onLag, if set, is called (without the lock) by the push that made
	// the queue overflow; it must not push.
	onLag func()
}

func newQueue(maxEvents, maxBytes int) *queue {
	if maxEvents <= 0 {
		maxEvents = DefaultQueueEvents
	}
	if maxBytes <= 0 {
		maxBytes = DefaultQueueBytes
	}
	return &queue{
		maxEvents: maxEvents,
		maxBytes:  maxBytes,
		ready:     make(chan struct{}, 1),
	}
}

// push queues ev, which the caller must not change afterwards. It reports
// false when the stream has already ended and ev was dropped.
func (q *queue) push(ev *Event) bool {
	size := ev.size()
	q.mu.Lock()
	ok, lagged := q.pushLocked(ev, size)
	q.mu.Unlock()
	if lagged && q.onLag != nil {
		q.onLag()
	}
	return ok
}

// pushLocked is push under q.mu; it also reports whether ev made the
// queue overflow.
func (q *queue) pushLocked(ev *Event, size int) (ok, lagged bool) {
	if q.ended {
		q.stats.Dropped++
		return false, false
	}
	switch {
	case ev.terminal():
		q.ended = true
		q.append(ev, size)
	case q.fits(size):
		q.append(ev, size)
	case q.replace(ev, size):
		q.stats.Coalesced++
	default:
		q.compact()
		switch {
		case q.replace(ev, size):
			q.stats.Coalesced++
		case q.fits(size):
			q.append(ev, size)
		default:
			// Coalescing cannot make room: the app must resync.
			q.stats.Dropped++
			q.stats.Lagged = true
			q.ended = true
			lag := &Event{Kind: KindLagged, Time: ev.Time,
				Error: "the app read its events too slowly and the queue overflowed; subscribe again to resync"}
			q.append(lag, lag.size())
			lagged = true
		}
	}
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true, lagged
}

func (q *queue) fits(size int) bool {
	return q.live+1 <= q.maxEvents && q.bytes+size <= q.maxBytes
}

func (q *queue) append(ev *Event, size int) {
	q.slots = append(q.slots, slot{ev: ev, size: size})
	q.live++
	q.bytes += size
	if q.latest != nil && !ev.terminal() {
		q.latest[ev.identity()] = len(q.slots) - 1
	}
}

// index builds latest from the queued slots.
func (q *queue) index() {
	q.latest = make(map[identity]int, q.live)
	for i, s := range q.slots {
		if !s.dead && !s.ev.terminal() {
			q.latest[s.ev.identity()] = i
		}
	}
}

// replace overwrites the newest queued event of ev's identity with ev (the
// latest state wins) if there is one and the size still fits.
func (q *queue) replace(ev *Event, size int) bool {
	if q.latest == nil {
		q.index()
	}
	i, ok := q.latest[ev.identity()]
	if !ok {
		return false
	}
	old := &q.slots[i]
	if q.bytes-old.size+size > q.maxBytes {
		return false
	}
	q.bytes += size - old.size
	old.ev, old.size = ev, size
	return true
}

// compact merges queued repeats: every identity keeps its oldest position
// with its newest content.
func (q *queue) compact() {
	first := map[identity]int{}
	for i := range q.slots {
		s := &q.slots[i]
		if s.dead || s.ev.terminal() {
			continue
		}
		id := s.ev.identity()
		f, ok := first[id]
		if !ok {
			first[id] = i
			continue
		}
		fs := &q.slots[f]
		q.bytes += s.size - fs.size
		fs.ev, fs.size = s.ev, s.size
		s.dead = true
		q.live--
		q.bytes -= s.size
		q.stats.Coalesced++
	}
	kept := q.slots[:0]
	for _, s := range q.slots {
		if !s.dead {
			kept = append(kept, s)
		}
	}
	clear(q.slots[len(kept):])
	q.slots = kept
	q.index()
}

// maxKeptSlots is the capacity take keeps for the next events; a larger
// one, left by a burst, is released.
const maxKeptSlots = 64

// take appends every queued event to buf, oldest first, and reports
// whether the last one ends the stream.
func (q *queue) take(buf []*Event) ([]*Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	end := false
	n := 0
	for _, s := range q.slots {
		if s.dead {
			continue
		}
		buf = append(buf, s.ev)
		end = end || s.ev.terminal()
		n++
	}
	if cap(q.slots) > maxKeptSlots {
		q.slots = nil
	} else {
		clear(q.slots)
		q.slots = q.slots[:0]
	}
	q.latest = nil
	q.live, q.bytes = 0, 0
	q.stats.Delivered += uint64(n)
	return buf, end
}

// close ends the queue: later pushes are dropped.
func (q *queue) close() {
	q.mu.Lock()
	q.ended = true
	q.mu.Unlock()
}

func (q *queue) snapshot() QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	st := q.stats
	st.Queued, st.Bytes = q.live, q.bytes
	return st
}
