package transport

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func texts(ls []Line) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Text
	}
	return out
}

func TestRingBounds(t *testing.T) {
	tests := []struct {
		name          string
		lines, bytes  int
		add           []string
		last          int
		want          []string
		wantTruncated bool
	}{
		{"under bounds", 5, 100, []string{"a", "b", "c"}, 10, []string{"a", "b", "c"}, false},
		{"line bound", 3, 100, []string{"1", "2", "3", "4", "5", "6", "7"}, 10, []string{"5", "6", "7"}, false},
		{"byte bound", 100, 10, []string{"aaaa", "bbbb", "cccc", "dd"}, 10, []string{"bbbb", "cccc", "dd"}, false},
		{"last n", 100, 100, []string{"a", "b", "c", "d"}, 2, []string{"c", "d"}, false},
		{"last zero", 100, 100, []string{"a"}, 0, []string{}, false},
		{"last negative", 100, 100, []string{"a"}, -1, []string{}, false},
		{"single line over byte bound", 10, 8, []string{"xx", "héééé"}, 10, []string{"hééé"}, true},
		{"wraps many times", 4, 1000, strings.Split("abcdefghijklmnopqrstuvwxyz", ""), 10, []string{"w", "x", "y", "z"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRing(tt.lines, tt.bytes)
			for _, s := range tt.add {
				r.Add(Line{Text: s, Time: time.Now()})
			}
			got := r.Last(tt.last)
			if diff := cmp.Diff(tt.want, texts(got)); diff != "" {
				t.Errorf("Last (-want +got):\n%s", diff)
			}
			if len(got) > 0 && got[len(got)-1].Truncated != tt.wantTruncated {
				t.Errorf("Truncated = %v, want %v", got[len(got)-1].Truncated, tt.wantTruncated)
			}
			total := 0
			for _, l := range r.Last(tt.lines + 1) {
				total += len(l.Text)
			}
			if total > tt.bytes || len(r.Last(tt.lines+1)) > tt.lines {
				t.Errorf("ring holds %d bytes in %d lines, bounds %d/%d", total, len(r.Last(tt.lines+1)), tt.bytes, tt.lines)
			}
		})
	}
}

func TestRingDefaults(t *testing.T) {
	r := NewRing(0, 0)
	for range DefaultRingLines + 10 {
		r.Add(Line{Text: "x"})
	}
	if n := len(r.Last(1 << 20)); n != DefaultRingLines {
		t.Errorf("holds %d lines, want %d", n, DefaultRingLines)
	}
	big := strings.Repeat("y", 64<<10)
	for range 40 {
		r.Add(Line{Text: big})
	}
	if n := len(r.Last(1 << 20)); n != DefaultRingBytes/len(big) {
		t.Errorf("holds %d lines of 64 KiB, want %d", n, DefaultRingBytes/len(big))
	}
}

func TestRingLastIsACopy(t *testing.T) {
	r := NewRing(2, 100)
	r.Add(Line{Text: "a"})
	got := r.Last(1)
	got[0].Text = "changed"
	if r.Last(1)[0].Text != "a" {
		t.Error("Last returned the ring's storage")
	}
}

func TestRingFollow(t *testing.T) {
	r := NewRing(10, 1000)
	r.Add(Line{Text: "old1"})
	r.Add(Line{Text: "old2"})
	backlog, ch, cancel := r.Follow(1)
	if diff := cmp.Diff([]string{"old2"}, texts(backlog)); diff != "" {
		t.Errorf("backlog (-want +got):\n%s", diff)
	}
	r.Add(Line{Text: "new1"})
	r.Add(Line{Text: "new2"})
	for _, want := range []string{"new1", "new2"} {
		if got := <-ch; got.Text != want {
			t.Errorf("followed %q, want %q", got.Text, want)
		}
	}
	if dropped := cancel(); dropped != 0 {
		t.Errorf("dropped %d", dropped)
	}
	if _, ok := <-ch; ok {
		t.Error("channel not closed by cancel")
	}
	cancel() // idempotent
	r.Add(Line{Text: "after cancel"})
}

// TestRingSlowFollowerNeverBlocksAdd: nobody reads ch; Add keeps going and
// the follower loses what does not fit.
func TestRingSlowFollowerNeverBlocksAdd(t *testing.T) {
	r := NewRing(10, 1000)
	ch, cancel := r.Subscribe()
	fast, cancelFast := r.Subscribe()
	received := 0
	const total = FollowBuffer + 100
	for i := range total {
		r.Add(Line{Text: "x"})
		if i%2 == 0 { // the fast one keeps up
			for len(fast) > 0 {
				<-fast
				received++
			}
		}
	}
	for len(fast) > 0 {
		<-fast
		received++
	}
	if d := cancelFast(); d != 0 || received != total {
		t.Errorf("fast follower received %d, dropped %d; want %d, 0", received, d, total)
	}
	if len(ch) != FollowBuffer {
		t.Errorf("slow follower holds %d lines, want %d", len(ch), FollowBuffer)
	}
	if d := cancel(); d != total-FollowBuffer {
		t.Errorf("dropped %d, want %d", d, total-FollowBuffer)
	}
}

func TestRingConcurrent(t *testing.T) {
	r := NewRing(50, 500)
	ch, cancel := r.Subscribe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range ch {
		}
	}()
	stop := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		for {
			select {
			case <-stop:
				return
			default:
				r.Last(20)
			}
		}
	}()
	for i := range 4 {
		_ = i
		for range 1000 {
			r.Add(Line{Text: "concurrent"})
		}
	}
	close(stop)
	<-readerDone
	cancel()
	<-done
	if n := len(r.Last(100)); n != 50 {
		t.Errorf("holds %d lines, want 50", n)
	}
}
