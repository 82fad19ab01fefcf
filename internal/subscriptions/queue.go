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
// they were pushed to, except a queue's own logs-lagged markers.
type slot struct {
	ev   *Event
	size int
	dead bool // merged into an earlier slot by compaction, or a dropped log message
}

func (ev *Event) identity() identity { return identity{ev.Server, ev.Kind, ev.URI} }

// coalesces reports whether ev may be merged with a queued event of its
// identity. Log messages are distinct even when their text is the same, so
// they never are: a full queue drops the oldest of them instead.
func (ev *Event) coalesces() bool {
	return ev.Kind != KindLog && ev.Kind != KindLogsLagged && ev.Kind != KindTaskStatus && !ev.terminal()
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
	// LogsDropped counts log messages discarded, oldest first, to make
	// room; each is counted in a logs-lagged event the app receives.
	LogsDropped uint64
	// Dropped counts events discarded because the stream had ended
	// (lagged, failed or closed).
	Dropped uint64
	// Lagged is true once the queue overflowed.
	Lagged bool
}

// queue is a bounded, coalescing, non-blocking event queue. push never
// blocks; the consumer waits on ready and takes everything queued. In the
// steady state (the app keeps up) neither push nor take allocates.
//
// When the queue is full, an event that coalesces replaces its queued
// repeat; otherwise the oldest queued log messages are dropped to make
// room, each counted in a logs-lagged marker of its server that takes the
// place of the first one dropped. Only when neither makes room does the
// stream end with a lagged event.
type queue struct {
	maxEvents, maxBytes int
	ready               chan struct{} // capacity 1: "something is queued"

	mu    sync.Mutex // guards the fields below
	slots []slot
	live  int // slots not dead
	dead  int // dead slots not yet swept out
	bytes int
	// latest indexes the newest live slot of each identity, for coalescing;
	// it is built when the queue first fills up and dropped by take.
	latest map[identity]int
	// logs counts the live log messages queued; no live one sits before
	// slots[logScan].
	logs, logScan int
	// marks holds the queued logs-lagged marker of each server, which
	// counts later drops too; it is dropped by take, which hands the
	// markers to the app.
	marks map[string]*Event
	ended bool // a terminal event was queued, or closed
	stats QueueStats

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
	case ev.coalesces() && q.replace(ev, size):
		q.stats.Coalesced++
	default:
		lagged = q.overflow(ev, size)
	}
	select {
	case q.ready <- struct{}{}:
	default:
	}
	return true, lagged
}

// overflow queues ev in a full queue: it merges repeats, then drops the
// oldest log messages, until ev fits or coalesced; a log message that
// still does not fit is dropped and counted itself. When nothing makes
// room the stream ends with a lagged event, and overflow reports true.
func (q *queue) overflow(ev *Event, size int) (lagged bool) {
	compacted := ev.coalesces()
	if compacted {
		q.compact()
		if q.replace(ev, size) {
			q.stats.Coalesced++
			return false
		}
	}
	// An event larger than the whole queue never fits: it must not cost
	// the queued log messages first.
	for size <= q.maxBytes && !q.fits(size) && q.dropOldestLog() {
	}
	if !q.fits(size) && !compacted {
		q.compact()
	}
	switch {
	case q.fits(size):
		q.append(ev, size)
		return false
	case ev.Kind == KindLog && q.dropIncoming(ev):
		return false
	}
	// Nothing can make room: the app must resync.
	q.stats.Dropped++
	q.stats.Lagged = true
	q.ended = true
	lag := &Event{Kind: KindLagged, Time: ev.Time,
		Error: "the app read its events too slowly and the queue overflowed; subscribe again to resync"}
	q.append(lag, lag.size())
	return true
}

// dropOldestLog drops the oldest queued log message and counts it in its
// server's marker, which takes the message's place if there is none yet;
// it reports false when no log message is queued.
func (q *queue) dropOldestLog() bool {
	if q.logs == 0 {
		return false
	}
	for q.slots[q.logScan].dead || q.slots[q.logScan].ev.Kind != KindLog {
		q.logScan++
	}
	s := &q.slots[q.logScan]
	q.logs--
	q.stats.LogsDropped++
	if m := q.marks[s.ev.Server]; m != nil {
		m.LogsDropped++
		q.bytes -= s.size
		q.live--
		q.dead++
		s.ev, s.dead = nil, true
		if q.dead > q.live {
			q.sweep()
		}
		return true
	}
	m := q.mark(s.ev)
	q.bytes += m.size() - s.size
	s.ev, s.size = m, m.size()
	return true
}

// dropIncoming drops the log message ev, which cannot fit, counting it in
// its server's marker, queued now if there is none and one fits; it
// reports false when ev can be counted nowhere.
func (q *queue) dropIncoming(ev *Event) bool {
	if m := q.marks[ev.Server]; m != nil {
		m.LogsDropped++
		q.stats.LogsDropped++
		return true
	}
	if !q.fits(markerSize(ev.Server)) {
		return false
	}
	m := q.mark(ev)
	q.append(m, m.size())
	q.stats.LogsDropped++
	return true
}

// markerSize is the size of a logs-lagged marker of server.
func markerSize(server string) int {
	m := Event{Kind: KindLogsLagged, Server: server}
	return m.size()
}

// mark returns a new marker counting the dropped log message ev and
// records it as its server's.
func (q *queue) mark(ev *Event) *Event {
	m := &Event{Kind: KindLogsLagged, Server: ev.Server, Time: ev.Time, LogsDropped: 1}
	if q.marks == nil {
		q.marks = map[string]*Event{}
	}
	q.marks[ev.Server] = m
	return m
}

func (q *queue) fits(size int) bool {
	return q.live+1 <= q.maxEvents && q.bytes+size <= q.maxBytes
}

func (q *queue) append(ev *Event, size int) {
	q.slots = append(q.slots, slot{ev: ev, size: size})
	q.live++
	q.bytes += size
	if ev.Kind == KindLog {
		q.logs++
	}
	if q.latest != nil && ev.coalesces() {
		q.latest[ev.identity()] = len(q.slots) - 1
	}
}

// index builds latest from the queued slots.
func (q *queue) index() {
	if q.latest == nil {
		q.latest = make(map[identity]int, q.live)
	} else {
		clear(q.latest)
	}
	for i, s := range q.slots {
		if !s.dead && s.ev.coalesces() {
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

// compact merges queued repeats: every identity that coalesces keeps its
// oldest position with its newest content.
func (q *queue) compact() {
	first := map[identity]int{}
	for i := range q.slots {
		s := &q.slots[i]
		if s.dead || !s.ev.coalesces() {
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
	q.sweep()
	if q.latest == nil {
		q.index()
	}
}

// sweep removes the dead slots, keeping the order of the others, and
// updates the indexes into slots.
func (q *queue) sweep() {
	kept := q.slots[:0]
	for _, s := range q.slots {
		if !s.dead {
			kept = append(kept, s)
		}
	}
	clear(q.slots[len(kept):])
	q.slots = kept
	q.dead, q.logScan = 0, 0
	if q.latest != nil {
		q.index()
	}
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
	q.latest, q.marks = nil, nil
	q.live, q.dead, q.bytes, q.logs, q.logScan = 0, 0, 0, 0, 0
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
