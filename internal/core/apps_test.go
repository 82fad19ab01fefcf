package core

import "testing"

// Ended connections are forgotten by add too, without a snapshot: the set
// never holds more than about twice the connections open at its last
// clean-up, and shrinks back once they have ended.
func TestTrackerForgetsEndedConnections(t *testing.T) {
	tr := newAppTracker()
	size := func() int {
		tr.mu.Lock()
		defer tr.mu.Unlock()
		return len(tr.conns)
	}
	tr.add(&appConn{id: 1, open: func() bool { return true }})
	const many = 10 * minPruneAt
	open := true
	for i := range many {
		tr.add(&appConn{id: uint64(i + 2), open: func() bool { return open }})
	}
	open = false // all but the first have ended
	for i := range 4 * many {
		tr.add(&appConn{id: uint64(many + 2 + i), open: func() bool { return false }})
		if n := size(); n > 2*(many+1)+1 {
			t.Fatalf("%d connections kept, at most %d were open", n, many+1)
		}
	}
	if n := size(); n > minPruneAt+1 {
		t.Fatalf("%d connections kept long after all but one ended", n)
	}
	if got := tr.snapshot(); len(got) != 1 {
		t.Fatalf("snapshot = %+v, want the one open app", got)
	}
}
