package subscriptions

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func upd(uri string, seq int) *Event {
	return &Event{Kind: KindResourceUpdated, Server: "s", URI: uri, Params: []byte(fmt.Sprintf(`{"uri":%q,"seq":%d}`, uri, seq))}
}

func TestQueueCoalescesWhenFull(t *testing.T) {
	q := newQueue(4, 0)
	for i := range 100 {
		if !q.push(upd(fmt.Sprintf("u%d", i%3), i)) {
			t.Fatalf("push %d dropped", i)
		}
	}
	st := q.snapshot()
	if st.Queued > 4 || st.Lagged || st.Coalesced == 0 {
		t.Fatalf("stats = %+v, want at most 4 queued, coalesced, not lagged", st)
	}
	evs, end := q.take(nil)
	if end {
		t.Fatal("queue ended")
	}
	last := map[string]string{}
	for _, ev := range evs {
		last[ev.URI] = string(ev.Params)
	}
	for i, want := range []int{99, 97, 98} {
		uri := fmt.Sprintf("u%d", i)
		if got := last[uri]; got != fmt.Sprintf(`{"uri":%q,"seq":%d}`, uri, want) {
			t.Errorf("%s: last = %s, want seq %d", uri, got, want)
		}
	}
}

func TestQueueLagsWhenCoalescingCannotHelp(t *testing.T) {
	q := newQueue(3, 0)
	lags := 0
	q.onLag = func() { lags++ }
	for i := range 4 {
		q.push(upd(fmt.Sprintf("u%d", i), i)) // four distinct identities
		if want := max(i-2, 0); lags != want {
			t.Fatalf("after push %d: onLag called %d times, want %d", i, lags, want)
		}
	}
	if q.push(upd("late", 9)) {
		t.Fatal("push after lagging was accepted")
	}
	if lags != 1 {
		t.Fatalf("onLag called %d times, want once", lags)
	}
	evs, end := q.take(nil)
	if !end || evs[len(evs)-1].Kind != KindLagged {
		t.Fatalf("events = %v, end = %v; want a final lagged event", evs, end)
	}
	if len(evs) != 4 { // the three queued, then lagged
		t.Fatalf("got %d events, want 4", len(evs))
	}
	if st := q.snapshot(); !st.Lagged || st.Dropped != 2 {
		t.Fatalf("stats = %+v, want lagged with 2 dropped", st)
	}
}

func TestQueueByteBound(t *testing.T) {
	ev := upd("u", 0)
	q := newQueue(1000, 3*ev.size())
	for i := range 50 {
		q.push(upd("u", i))
	}
	if st := q.snapshot(); st.Bytes > 3*ev.size() || st.Lagged {
		t.Fatalf("stats = %+v, want within %d bytes", st, 3*ev.size())
	}
}

func TestURIMatches(t *testing.T) {
	tests := []struct {
		sub, upd string
		want     bool
	}{
		{"file:///a", "file:///a", true},
		{"file:///a", "file:///a/b", true},
		{"file:///a/", "file:///a/b", true},
		{"file:///a", "file:///ab", false},
		{"file:///a/b", "file:///a", false},
	}
	for _, tc := range tests {
		if got := uriMatches(tc.sub, tc.upd); got != tc.want {
			t.Errorf("uriMatches(%q, %q) = %v, want %v", tc.sub, tc.upd, got, tc.want)
		}
	}
}

// After a take, coalescing must use the new slots: an index left from the
// previous fill would overwrite an event that is no longer where it was.
func TestQueueCoalescesAgainAfterTake(t *testing.T) {
	q := newQueue(2, 0)
	q.push(upd("a", 0))
	q.push(upd("b", 1))
	q.push(upd("a", 2)) // full: replaces a, at the first slot
	if evs, _ := q.take(nil); len(evs) != 2 || string(evs[0].Params) != `{"uri":"a","seq":2}` {
		t.Fatalf("first take: %v, want a (seq 2) then b", evs)
	}
	q.push(upd("c", 3))
	q.push(upd("d", 4))
	q.push(upd("a", 5)) // full, no a queued now: nothing to merge into, so the app lags
	evs, end := q.take(nil)
	if !end || len(evs) != 3 || evs[0].URI != "c" || evs[1].URI != "d" || evs[2].Kind != KindLagged {
		t.Fatalf("second take: %v (end %v), want c, d, lagged", evs, end)
	}
	if st := q.snapshot(); st.Coalesced != 1 || !st.Lagged {
		t.Fatalf("stats = %+v, want 1 coalesced, lagged", st)
	}
}

// A slow app's queue keeps each identity at its oldest position with its
// newest content, in the order the identities first appeared.
func TestQueueCompactionKeepsFirstPositions(t *testing.T) {
	q := newQueue(3, 0)
	q.push(upd("a", 0))
	q.push(upd("b", 1))
	q.push(upd("a", 2)) // fits: a queued twice
	q.push(upd("b", 3)) // full: replaces the newest b
	q.push(upd("c", 4)) // full, no c: compaction merges the two a's, then c fits
	evs, end := q.take(nil)
	var got []string
	for _, ev := range evs {
		got = append(got, string(ev.Params))
	}
	want := []string{`{"uri":"a","seq":2}`, `{"uri":"b","seq":3}`, `{"uri":"c","seq":4}`}
	if end || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %v (end %v), want %v", got, end, want)
	}
	if st := q.snapshot(); st.Coalesced != 2 || st.Delivered != 3 || st.Queued != 0 {
		t.Fatalf("stats = %+v, want 2 coalesced, 3 delivered, none queued", st)
	}
}

// An app that keeps up costs no allocation per event in its queue.
func TestQueueSteadyStateDoesNotAllocate(t *testing.T) {
	q := newQueue(0, 0)
	ev := upd("u", 1)
	var buf []*Event
	buf, _ = q.take(buf) // warm up the slots
	allocs := testing.AllocsPerRun(1000, func() {
		q.push(ev)
		q.push(ev)
		buf, _ = q.take(buf[:0])
		<-q.ready
	})
	if allocs != 0 {
		t.Fatalf("push, push, take: %v allocations, want 0", allocs)
	}
}

func logMsg(server string, seq int) *Event {
	return &Event{Kind: KindLog, Server: server, Params: []byte(fmt.Sprintf(`{"level":"info","data":{"seq":%d}}`, seq))}
}

// A full queue never merges log messages, however alike: it drops the
// oldest and counts them in one logs-lagged marker in their place, and the
// stream goes on.
func TestQueueDropsOldestLogMessagesWithACount(t *testing.T) {
	q := newQueue(4, 0)
	lags := 0
	q.onLag = func() { lags++ }
	for i := range 100 {
		if !q.push(logMsg("s", i)) {
			t.Fatalf("push %d dropped", i)
		}
	}
	evs, end := q.take(nil)
	if end || lags != 0 || len(evs) != 4 {
		t.Fatalf("took %d events (end %v, %d lags), want 4 and the stream open", len(evs), end, lags)
	}
	if m := evs[0]; m.Kind != KindLogsLagged || m.Server != "s" || m.LogsDropped != 97 {
		t.Fatalf("first event = %+v, want a logs-lagged marker of s counting 97", m)
	}
	for i, ev := range evs[1:] {
		if want := logMsg("s", 97+i); ev.Kind != KindLog || string(ev.Params) != string(want.Params) {
			t.Errorf("event %d = %s, want %s", i+1, ev.Params, want.Params)
		}
	}
	if st := q.snapshot(); st.LogsDropped != 97 || st.Coalesced != 0 || st.Lagged || st.Delivered != 4 {
		t.Fatalf("stats = %+v, want 97 log messages dropped, none coalesced", st)
	}
	// After the take, a new burst gets a new marker.
	for i := range 6 {
		q.push(logMsg("s", 100+i))
	}
	if evs, _ := q.take(nil); evs[0].Kind != KindLogsLagged || evs[0].LogsDropped != 3 {
		t.Fatalf("second burst: first event %+v, want a marker counting 3", evs[0])
	}
}

// Each server's dropped log messages are counted in its own marker; a
// notice that is not a log message takes the room of the oldest log
// message instead of ending the stream.
func TestQueueLogMarkersPerServerAndRoomForNotices(t *testing.T) {
	q := newQueue(4, 0)
	q.push(logMsg("a", 0))
	q.push(logMsg("b", 1))
	q.push(logMsg("a", 2))
	q.push(logMsg("b", 3))
	q.push(upd("u", 4)) // drops a0 (marker a), then b1 (marker b), then a2 (counted by a)
	q.push(logMsg("b", 5))
	evs, end := q.take(nil)
	var got []string
	for _, ev := range evs {
		switch ev.Kind {
		case KindLogsLagged:
			got = append(got, fmt.Sprintf("%s:dropped %d", ev.Server, ev.LogsDropped))
		case KindLog:
			got = append(got, fmt.Sprintf("%s:%s", ev.Server, ev.Params))
		default:
			got = append(got, ev.URI)
		}
	}
	want := []string{"a:dropped 2", "b:dropped 2", "u", `b:{"level":"info","data":{"seq":5}}`}
	if end || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q (end %v), want %q", got, end, want)
	}
}

// A log message too large for the byte bound is counted, not queued.
func TestQueueCountsALogMessageThatCannotFit(t *testing.T) {
	small := logMsg("s", 0)
	q := newQueue(10, 2*small.size())
	q.push(upd("u", 0))
	big := &Event{Kind: KindLog, Server: "s", Params: make([]byte, 4*small.size())}
	if !q.push(big) {
		t.Fatal("push dropped")
	}
	evs, end := q.take(nil)
	if end || len(evs) != 2 || evs[0].URI != "u" || evs[1].Kind != KindLogsLagged || evs[1].LogsDropped != 1 {
		t.Fatalf("events %v (end %v), want the update, then a marker counting 1", evs, end)
	}
}

// A log message larger than the whole queue is counted alone: the log
// messages queued before it stay.
func TestQueueOversizeLogKeepsQueuedLogs(t *testing.T) {
	small := logMsg("a", 0)
	q := newQueue(100, 4*small.size())
	for i := range 3 {
		q.push(logMsg("a", i))
	}
	big := &Event{Kind: KindLog, Server: "b", Params: make([]byte, 8*small.size())}
	if !q.push(big) {
		t.Fatal("push dropped")
	}
	evs, end := q.take(nil)
	logs := 0
	for _, ev := range evs {
		switch {
		case ev.Kind == KindLog:
			logs++
		case ev.Kind == KindLogsLagged && ev.Server == "a":
			t.Errorf("a's queued log messages were dropped (%d) for one that never fits", ev.LogsDropped)
		}
	}
	if end || logs != 3 {
		t.Fatalf("took %d log messages (end %v) of %v, want the 3 queued ones and the stream open", logs, end, evs)
	}
}

// An app that keeps up with log messages costs no allocation either.
func TestQueueSteadyLogsDoNotAllocate(t *testing.T) {
	q := newQueue(0, 0)
	ev := logMsg("s", 1)
	var buf []*Event
	buf, _ = q.take(buf)
	allocs := testing.AllocsPerRun(1000, func() {
		q.push(ev)
		q.push(ev)
		buf, _ = q.take(buf[:0])
		<-q.ready
	})
	if allocs != 0 {
		t.Fatalf("push, push, take: %v allocations, want 0", allocs)
	}
}
