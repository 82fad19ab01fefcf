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

// item is one queued event.
type item struct {
	ev   Event
	id   identity
	size int
	dead bool // merged into a later position's entry by compaction
}

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
// blocks; the consumer waits on ready and takes everything queued.
type queue struct {
	maxEvents, maxBytes int
	ready               chan struct{} // capacity 1: "something is queued"

	mu     sync.Mutex // guards the fields below
	items  []*item
	live   int // items not dead
	bytes  int
	latest map[identity]*item // newest queued item of each identity
	ended  bool               // a terminal event was queued, or closed
	stats  QueueStats
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
		latest:    map[identity]*item{},
	}
}

// push queues ev. It reports false when the stream has already ended and
// ev was dropped.
func (q *queue) push(ev Event) bool {
	it := &item{ev: ev, id: identity{ev.Server, ev.Kind, ev.URI}, size: ev.size()}
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.ended {
		q.stats.Dropped++
		return false
	}
	switch {
	case ev.terminal():
		q.ended = true
		q.append(it)
	case q.fits(it.size):
		q.append(it)
		q.latest[it.id] = it
	case q.replace(it):
		q.stats.Coalesced++
	default:
		q.compact()
		switch {
		case q.replace(it):
			q.stats.Coalesced++
		case q.fits(it.size):
			q.append(it)
			q.latest[it.id] = it
		default:
			// Coalescing cannot make room: the app must resync.
			q.stats.Dropped++
			q.stats.Lagged = true
			q.ended = true
			q.append(&item{ev: Event{Kind: KindLagged, Time: ev.Time,
				Error: "the app read its events too slowly and the queue overflowed; subscribe again to resync"}})
		}
	}
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true
}

func (q *queue) fits(size int) bool {
	return q.live+1 <= q.maxEvents && q.bytes+size <= q.maxBytes
}

func (q *queue) append(it *item) {
	q.items = append(q.items, it)
	q.live++
	q.bytes += it.size
}

// replace overwrites the newest queued event of it's identity with it (the
// latest state wins) if there is one and the size still fits.
func (q *queue) replace(it *item) bool {
	old := q.latest[it.id]
	if old == nil || old.dead || q.bytes-old.size+it.size > q.maxBytes {
		return false
	}
	q.bytes += it.size - old.size
	old.ev, old.size = it.ev, it.size
	return true
}

// compact merges queued repeats: every identity keeps its oldest position
// with its newest content.
func (q *queue) compact() {
	first := map[identity]*item{}
	for _, it := range q.items {
		if it.dead || it.ev.terminal() {
			continue
		}
		f := first[it.id]
		if f == nil {
			first[it.id] = it
			continue
		}
		q.bytes += it.size - f.size
		f.ev, f.size = it.ev, it.size
		it.dead = true
		q.live--
		q.bytes -= it.size
		q.stats.Coalesced++
		q.latest[it.id] = f
	}
	kept := q.items[:0]
	for _, it := range q.items {
		if !it.dead {
			kept = append(kept, it)
		}
	}
	clear(q.items[len(kept):])
	q.items = kept
}

// take returns every queued event, oldest first, and whether the last one
// ends the stream.
func (q *queue) take() ([]Event, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Event, 0, q.live)
	end := false
	for _, it := range q.items {
		if it.dead {
			continue
		}
		out = append(out, it.ev)
		end = end || it.ev.terminal()
	}
	clear(q.items)
	q.items = q.items[:0]
	clear(q.latest)
	q.live, q.bytes = 0, 0
	q.stats.Delivered += uint64(len(out))
	return out, end
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
