package subscriptions

// Totals are the fan-out counters of a manager: the queues of the open
// streams added to those of every stream already closed. They are read at
// scrape time by internal/metrics, so the fan-out path itself keeps no
// extra counters.
type Totals struct {
	// Streams is how many streams are open now; Queued how many events
	// wait in their queues.
	Streams int
	Queued  int
	// Opened counts every stream ever opened.
	Opened uint64
	// Delivered, Coalesced and Dropped add up QueueStats of every stream.
	// A closed stream contributes what its queue had counted when it was
	// closed (events taken or dropped after that are not counted).
	Delivered, Coalesced, Dropped uint64
	// LogsDropped adds up the log messages dropped to make room.
	LogsDropped uint64
	// Lagged counts the streams whose queue overflowed.
	Lagged uint64
}

// add adds one stream's queue counters (not its current size).
func (t *Totals) add(q QueueStats) {
	t.Delivered += q.Delivered
	t.Coalesced += q.Coalesced
	t.Dropped += q.Dropped
	t.LogsDropped += q.LogsDropped
	if q.Lagged {
		t.Lagged++
	}
}

// retireLocked folds a stream that is being removed into m.retired; m.mu
// must be held for writing.
func (m *Manager) retireLocked(st *Stream) {
	m.retired.add(st.q.snapshot())
	m.retired.Opened++
}

// Totals returns the fan-out counters of every stream, open or closed.
func (m *Manager) Totals() Totals {
	// The open queues are read under the read lock, so that a stream
	// being retired meanwhile is counted exactly once.
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.retired
	for _, st := range m.streams {
		q := st.q.snapshot()
		t.add(q)
		t.Queued += q.Queued
		t.Streams++
	}
	t.Opened += uint64(t.Streams)
	return t
}
