package supervisor

import (
	"context"
	"sync/atomic"
	"testing"
)

// countingLoad is a CallLoad that counts.
type countingLoad struct{ in, max, entered, exited atomic.Int64 }

func (l *countingLoad) Enter() {
	l.entered.Add(1)
	if n := l.in.Add(1); n > l.max.Load() {
		l.max.Store(n)
	}
}

func (l *countingLoad) Exit() {
	l.exited.Add(1)
	l.in.Add(-1)
}

func (l *countingLoad) FanOut(int) {}

// Every call and list of an app is counted once while it runs (the fetch
// a cold list makes inside is the same request), and not after.
func TestLoadCountsCallsAndLists(t *testing.T) {
	load := &countingLoad{}
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("a", "legacy")}, Load: load}, nil)
	h.mustEcho("a", "hi")
	if _, _, err := h.s.CallCached(context.Background(), "a", toolCall("echo", map[string]any{"message": "x"}), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := h.s.ListCached(context.Background(), "a", "tools/list", nil, CallOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := h.s.Call(context.Background(), "nope", toolCall("echo", nil), CallOptions{}); err == nil {
		t.Fatal("a call to an unknown server succeeded")
	}
	if e, x := load.entered.Load(), load.exited.Load(); e != 4 || x != 4 || load.in.Load() != 0 {
		t.Fatalf("entered %d, exited %d, in flight %d; want the 4 requests counted once each and ended", e, x, load.in.Load())
	}
	if m := load.max.Load(); m != 1 {
		t.Fatalf("most in flight %d, want 1 for sequential requests", m)
	}
}
