package logsink

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pipe returns a real pipe; its write end is in the poller, as
// pollio.Stderr's is.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// readLines reads r's lines, of up to 1 MiB, until its writers are gone,
// and then sends them.
func readLines(r *os.File) <-chan []string {
	got := make(chan []string, 1)
	go func() { // owned: the test waits for what it sends
		var lines []string
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		got <- lines
	}()
	return got
}

// writeAll writes lines "line N" for N in [from, to) and fails the test if
// the writes do not all return within a generous bound: a Write must never
// wait for the stream.
func writeAll(t *testing.T, s *Sink, from, to int) {
	t.Helper()
	done := make(chan struct{})
	go func() { // owned: waited for below
		defer close(done)
		for i := from; i < to; i++ {
			if _, err := fmt.Fprintf(s, "line %d\n", i); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Write waited for a stream that was not being read")
	}
}

func TestEntriesReachTheStreamInOrder(t *testing.T) {
	r, w := pipe(t)
	s := New(w, Options{})
	got := readLines(r) // until w is closed below
	writeAll(t, s, 0, 5000)
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(s, "after close\n"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := <-got
	if len(lines) != 5001 || lines[5000] != "after close" {
		t.Fatalf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
	for i, l := range lines[:5000] {
		if l != "line "+strconv.Itoa(i) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
}

// While nobody reads the stream, writes return at once; what does not fit
// in the queue is dropped whole and counted, and once the stream is read
// again, the note says how many, and later entries follow.
func TestStreamNotReadDropsEntriesAndSaysHowMany(t *testing.T) {
	r, w := pipe(t)
	s := New(w, Options{MaxQueued: 4096, Note: func(n int) []byte {
		return []byte("dropped " + strconv.Itoa(n) + "\n")
	}})
	// Write until the pipe is full and Sync no longer returns: on a busy
	// machine the writer may take little of a burst before the queue is
	// full, so one burst may not fill the pipe.
	total := 0
	for {
		writeAll(t, s, total, total+2000) // about 23 KB
		total += 2000
		if err := s.SyncWithin(50 * time.Millisecond); err != nil {
			break
		}
		if total >= 1_000_000 {
			t.Fatal("Sync returned with the stream full")
		}
	}
	got := readLines(r) // until w is closed below
	if err := s.Sync(); err != nil {
		t.Fatal(err)
	}
	writeAll(t, s, total, total+1)
	if err := s.Close(time.Second); err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := <-got
	next, dropped, notes := 0, 0, 0
	for _, l := range lines {
		if n, ok := strings.CutPrefix(l, "dropped "); ok {
			k, _ := strconv.Atoi(n)
			dropped += k
			notes++
			continue
		}
		i, err := strconv.Atoi(strings.TrimPrefix(l, "line "))
		if err != nil || i < next {
			t.Fatalf("line %q out of order (next %d)", l, next)
		}
		next = i + 1
	}
	delivered := len(lines) - notes
	if notes == 0 || dropped == 0 {
		t.Fatalf("no note of dropped entries in %d lines", len(lines))
	}
	if delivered+dropped != total+1 {
		t.Fatalf("%d delivered + %d dropped, want %d", delivered, dropped, total+1)
	}
	if lines[len(lines)-1] != "line "+strconv.Itoa(total) {
		t.Fatalf("last line %q, want the one written after the drain", lines[len(lines)-1])
	}
}

// Close gives up on a stream that takes nothing, ends the write in
// progress with a deadline, and leaves no goroutine (goleak).
func TestCloseGivesUpOnAStreamThatTakesNothing(t *testing.T) {
	_, w := pipe(t)
	s := New(w, Options{MaxQueued: 1 << 16})
	writeAll(t, s, 0, 20000)
	if err := s.Close(50 * time.Millisecond); err == nil {
		t.Fatal("Close reported the queue written")
	}
	if err := s.Close(time.Millisecond); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// A write while Close drains the queue is queued behind it, not written
// past it (and does not wait for the stream either).
func TestWriteDuringCloseIsQueuedInOrder(t *testing.T) {
	r, w := pipe(t)
	s := New(w, Options{})
	writeAll(t, s, 0, 3000) // about 30 KB
	big := strings.Repeat("x", 100<<10) + "\n"
	if _, err := io.WriteString(s, big); err != nil { // more than the pipe holds
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close(10 * time.Second) }() // owned: waited for below
	time.Sleep(20 * time.Millisecond)                   // Close is draining into the full pipe
	writeAll(t, s, 3000, 3001)
	got := readLines(r) // until w is closed below
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	w.Close()
	lines := <-got
	if len(lines) != 3002 || lines[3000] != strings.TrimSuffix(big, "\n") || lines[3001] != "line 3000" {
		t.Fatalf("%d lines; the last is %.20q", len(lines), lines[len(lines)-1])
	}
}
