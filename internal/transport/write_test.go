package transport

import (
	"runtime"
	"strings"
	"testing"
)

// TestLargeMessageWrittenWithoutCopy: a large message goes to the child's
// stdin as it is, its newline after it, instead of being copied into a
// write buffer to append the newline (twice its size, with the growth).
func TestLargeMessageWrittenWithoutCopy(t *testing.T) {
	p := startChild(t, "ignore-stdin", nil)
	var ready struct{ Ready bool }
	readJSON(t, p, &ready)
	const size = 2 << 20
	msg := []byte(`{"big":"` + strings.Repeat("q", size) + `"}`)
	best := ^uint64(0)
	var before, after runtime.MemStats
	for range 3 {
		runtime.ReadMemStats(&before)
		if err := p.WriteMessage(t.Context(), msg); err != nil {
			t.Fatal(err)
		}
		runtime.ReadMemStats(&after)
		best = min(best, after.TotalAlloc-before.TotalAlloc)
	}
	if best > size/8 {
		t.Errorf("writing a %d MiB message allocated %.2f times its size, want no copy", size>>20, float64(best)/size)
	}
}
