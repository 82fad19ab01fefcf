package subscriptions

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"
)

const (
	ackMethod     = "notifications/subscriptions/acknowledged"
	updatedMethod = "notifications/resources/updated"
)

func updated(uri string) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"uri":%q}`, uri))
}

// deliveries feeds msgs (gen, method, uri) through a cutover and returns
// the URIs delivered at once, then the ones released after dupWindow.
func deliveries(t *testing.T, msgs [][3]string) (now, later []string) {
	t.Helper()
	var c cutover
	start := time.Unix(1000, 0)
	for _, m := range msgs {
		var gen uint64
		fmt.Sscan(m[0], &gen)
		params := json.RawMessage(`{}`)
		if m[1] == updatedMethod {
			params = updated(m[2])
		}
		out, _ := c.take(gen, m[1], params, start)
		for _, n := range out {
			now = append(now, identityURI(n))
		}
	}
	if out, _ := c.release(start.Add(dupWindow-time.Nanosecond), false); len(out) != 0 {
		t.Fatalf("released before dupWindow: %v", out)
	}
	out, more := c.release(start.Add(dupWindow), false)
	if more {
		t.Fatal("still held after dupWindow")
	}
	for _, n := range out {
		later = append(later, identityURI(n))
	}
	return now, later
}

func identityURI(n heldCopy) string {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(n.params, &p)
	return p.URI
}

func TestCutover(t *testing.T) {
	tests := []struct {
		name       string
		msgs       [][3]string
		now, later string
	}{
		{"the current listen delivers",
			[][3]string{{"1", ackMethod, ""}, {"1", updatedMethod, "a"}, {"1", updatedMethod, "a"}},
			"[a a]", "[]"},
		// A server that sends every change on every listen (fakemcp): the
		// copy on the old listen after the new acknowledgement is a twin.
		{"twin after the cut-over, old copy first",
			[][3]string{{"1", ackMethod, ""}, {"2", ackMethod, ""}, {"1", updatedMethod, "a"}, {"2", updatedMethod, "a"}},
			"[a]", "[]"},
		{"twin after the cut-over, new copy first",
			[][3]string{{"1", ackMethod, ""}, {"2", ackMethod, ""}, {"2", updatedMethod, "a"}, {"1", updatedMethod, "a"}},
			"[a]", "[]"},
		{"twins on a zombie and the current listen",
			[][3]string{{"1", ackMethod, ""}, {"2", ackMethod, ""}, {"2", updatedMethod, "a"}, {"1", updatedMethod, "a"},
				{"1", updatedMethod, "a"}, {"2", updatedMethod, "a"}},
			"[a a]", "[]"},
		// "On stdio the ordering is per subscription id only": a change the
		// server sent on the old listens before it registered the new one
		// arrives after the new acknowledgement. It has no twin: it is
		// delivered once, after dupWindow (the bug this replaced dropped it).
		{"change from before the new listen, after its ack",
			[][3]string{{"1", ackMethod, ""}, {"2", ackMethod, ""}, {"3", ackMethod, ""},
				{"1", updatedMethod, "a"}, {"2", updatedMethod, "a"}},
			"[]", "[a]"},
		{"such a change for another resource than the new listen's next",
			[][3]string{{"1", ackMethod, ""}, {"2", ackMethod, ""}, {"1", updatedMethod, "b"}, {"2", updatedMethod, "a"}},
			"[a]", "[b]"},
		// A server that sends each change on the newest listen only (the Go
		// SDK): nothing is a duplicate, nothing is dropped.
		{"last registration wins",
			[][3]string{{"1", ackMethod, ""}, {"1", updatedMethod, "a"}, {"2", ackMethod, ""}, {"1", updatedMethod, "b"},
				{"2", updatedMethod, "c"}},
			"[a c]", "[b]"},
		// A server breaking the ordering rule: a notification before its
		// listen's acknowledgement belongs to that listen.
		{"before its acknowledgement",
			[][3]string{{"1", ackMethod, ""}, {"2", updatedMethod, "a"}, {"2", ackMethod, ""}},
			"[a]", "[]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now, later := deliveries(t, tc.msgs)
			if fmt.Sprint(now) != tc.now || fmt.Sprint(later) != tc.later {
				t.Fatalf("delivered %v, then %v; want %s, then %s", now, later, tc.now, tc.later)
			}
		})
	}
}

// A notification held for its twin is dropped when the twin arrives, and
// every one is delivered when the listens are closed.
func TestCutoverRelease(t *testing.T) {
	var c cutover
	now := time.Unix(1000, 0)
	c.take(1, ackMethod, nil, now)
	c.take(2, ackMethod, nil, now)
	if out, held := c.take(1, updatedMethod, updated("a"), now); len(out) != 0 || !held {
		t.Fatalf("old copy: %v held %v", out, held)
	}
	c.take(1, updatedMethod, updated("b"), now)
	c.take(1, updatedMethod, updated("b"), now) // two notices of b held: released as one
	if out, held := c.take(2, updatedMethod, updated("a"), now); len(out) != 1 || !held {
		t.Fatalf("twin: %v held %v", out, held)
	}
	out, more := c.release(now, true)
	if len(out) != 1 || identityURI(out[0]) != "b" || more {
		t.Fatalf("release all: %v, more %v", out, more)
	}
	c.reset()
	if out, more := c.release(now.Add(time.Hour), true); len(out) != 0 || more {
		t.Fatalf("after reset: %v %v", out, more)
	}
}
