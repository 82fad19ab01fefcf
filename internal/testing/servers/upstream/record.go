package upstream

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// WaitTimeout bounds every wait of this package: a safety net against
// hangs, never an expectation about speed.
const WaitTimeout = 60 * time.Second

// record is a growing list that tests wait on.
type record[T any] struct {
	mu      sync.Mutex    // guards items and changed
	items   []T           // in arrival order
	changed chan struct{} // closed and replaced at each add
}

func newRecord[T any]() *record[T] { return &record[T]{changed: make(chan struct{})} }

func (r *record[T]) add(v T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.items = append(r.items, v)
	close(r.changed)
	r.changed = make(chan struct{})
}

func (r *record[T]) snapshot() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// find returns the first item that match accepts, waiting for one until
// WaitTimeout, or until stop is closed (nil: never) and nothing that came
// before matches; ok is false then.
func (r *record[T]) find(match func(T) bool, stop <-chan struct{}) (v T, ok bool) {
	deadline := time.NewTimer(WaitTimeout)
	defer deadline.Stop()
	seen, stopped := 0, false
	for {
		r.mu.Lock()
		for ; seen < len(r.items); seen++ {
			if match(r.items[seen]) {
				v := r.items[seen]
				r.mu.Unlock()
				return v, true
			}
		}
		ch := r.changed
		r.mu.Unlock()
		if stopped {
			return v, false
		}
		select {
		case <-ch:
		case <-stop:
			stopped = true // one more look at what arrived before the end
		case <-deadline.C:
			return v, false
		}
	}
}

// wait is find that fails the test when nothing matches; what names the
// item in the failure, dump the record.
func (r *record[T]) wait(t testing.TB, what string, match func(T) bool, stop <-chan struct{}, dump func() string) T {
	t.Helper()
	v, ok := r.find(match, stop)
	if !ok {
		t.Fatalf("no %s; seen:\n%s", what, dump())
	}
	return v
}

// joinLines renders items one a line.
func joinLines[T any](items []T) string {
	var b strings.Builder
	for _, it := range items {
		fmt.Fprintln(&b, it)
	}
	return b.String()
}
