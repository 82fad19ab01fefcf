package subscriptions

import (
	"fmt"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func upd(uri string, seq int) Event {
	return Event{Kind: KindResourceUpdated, Server: "s", URI: uri, Params: []byte(fmt.Sprintf(`{"uri":%q,"seq":%d}`, uri, seq))}
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
	evs, end := q.take()
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
	for i := range 4 {
		q.push(upd(fmt.Sprintf("u%d", i), i)) // four distinct identities
	}
	if q.push(upd("late", 9)) {
		t.Fatal("push after lagging was accepted")
	}
	evs, end := q.take()
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
