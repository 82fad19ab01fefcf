package subscriptions

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
)

// OnFanOut hears how many streams an event was queued for, when more
// than one.
func TestOnFanOut(t *testing.T) {
	var calls, last atomic.Int64
	m := New(Options{Source: downSource{[]string{"a"}}, OnFanOut: func(n int) {
		calls.Add(1)
		last.Store(int64(n))
	}})
	t.Cleanup(m.Close)
	ctx := context.Background()
	update := func() { m.OnNotification("a", "notifications/resources/updated", []byte(`{"uri":"r://x"}`)) }
	for i := range 5 {
		if _, _, err := m.Subscribe(ctx, AppInfo{Name: fmt.Sprint("app", i)}, Watch{Servers: []string{"a"}, URIs: []string{"r://x"}}); err != nil {
			t.Fatal(err)
		}
		update()
		want := int64(0)
		if i > 0 {
			want = int64(i)
		}
		if got := calls.Load(); got != want {
			t.Fatalf("with %d streams: OnFanOut called %d times in all, want %d", i+1, got, want)
		}
		if i > 0 && last.Load() != int64(i+1) {
			t.Fatalf("with %d streams: OnFanOut(%d)", i+1, last.Load())
		}
	}
}
