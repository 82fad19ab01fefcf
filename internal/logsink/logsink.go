// Package logsink is the daemon's log output: a writer whose Write never
// waits for the stream behind it.
//
// A daemon's stderr is a pipe or journald's socket; when nobody reads it
// (a paused pager, journald restarting, a supervisor that stopped
// draining) a plain write(2) blocks, and with it every goroutine that logs:
// a child's crash, a reload, a call's error path. A Sink queues whole
// entries instead, up to a bound, and writes them from one goroutine of its
// own. When the stream does not keep up and the queue is full, an entry is
// dropped and counted, and once the stream takes writes again a note says
// how many were lost.
package logsink

import (
	"errors"
	"io"
	"os"
	"strconv"
	"sync"
	"time"
)

// DefaultMaxQueued is the default bound of a Sink's queue, in bytes: a few
// thousand log lines.
const DefaultMaxQueued = 1 << 20

// Options configure a Sink.
type Options struct {
	// MaxQueued bounds the bytes queued for the stream; 0 means
	// DefaultMaxQueued.
	MaxQueued int
	// Note formats the entry that says n entries were dropped; nil: a plain
	// line.
	Note func(n int) []byte
}

// Sink is an io.Writer (and zapcore.WriteSyncer) that queues each write
// for its own goroutine. Its methods are safe for concurrent use; Close
// ends the goroutine.
type Sink struct {
	out  io.Writer
	max  int
	note func(n int) []byte
	wake chan struct{} // capacity 1: the queue has something, or Close
	done chan struct{} // closed when the writer goroutine returns

	mu       sync.Mutex      // guards queued, dropped, waiters, closed and finished
	queued   []byte          // whole entries, in order
	dropped  int             // entries dropped since the last note
	waiters  []chan struct{} // Sync calls, closed once what precedes them is written
	closed   bool            // Close was called: the writer ends once the queue is out
	finished bool            // the writer took its last batch: writes go to the stream
}

// New starts a Sink writing to out. A Write error of out (a closed stderr)
// is ignored: the log has nowhere else to go.
func New(out io.Writer, opts Options) *Sink {
	s := &Sink{out: out, max: opts.MaxQueued, note: opts.Note,
		wake: make(chan struct{}, 1), done: make(chan struct{})}
	if s.max <= 0 {
		s.max = DefaultMaxQueued
	}
	if s.note == nil {
		s.note = plainNote
	}
	go s.run() // owned: Close waits for it
	return s
}

// Write queues a copy of p whole, or drops it when the queue has no room
// for it (an entry larger than the whole queue is always dropped). It never
// waits for the stream, and always reports success: a dropped entry is
// counted and noted. Once Close has written the queue (or given up on the
// stream), it writes p to the stream directly.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return s.out.Write(p)
	}
	if len(s.queued)+len(p) > s.max {
		s.dropped++
	} else {
		s.queued = append(s.queued, p...)
	}
	s.mu.Unlock()
	s.poke()
	return len(p), nil
}

// errStuck is Sync's error when the stream did not take what was queued.
var errStuck = errors.New("log output did not take the queued entries in time")

// syncTimeout bounds Sync.
const syncTimeout = 2 * time.Second

// Sync waits until what was written before it is on the stream, for up to
// syncTimeout (zap calls it after a fatal entry).
func (s *Sink) Sync() error { return s.SyncWithin(syncTimeout) }

// SyncWithin is Sync with its own bound.
func (s *Sink) SyncWithin(timeout time.Duration) error {
	w := make(chan struct{})
	s.mu.Lock()
	if s.finished {
		s.mu.Unlock()
		return nil
	}
	s.waiters = append(s.waiters, w)
	s.mu.Unlock()
	s.poke()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w:
		return nil
	case <-t.C:
		return errStuck
	}
}

// Close writes what is queued, for up to timeout, and ends the writer
// goroutine. When the stream still does not take it, Close ends a write in
// progress with a deadline if the stream has write deadlines (a file in the
// poller, such as pollio.Stderr), and waits for the goroutine only then;
// a stream without them may keep the goroutine until it takes the write.
// Later writes go to the stream directly.
func (s *Sink) Close(timeout time.Duration) error {
	s.mu.Lock()
	again := s.closed
	s.closed = true
	s.mu.Unlock()
	s.poke()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-s.done:
		return nil
	case <-t.C:
	}
	if again {
		return errStuck // the first Close ends the stream's write
	}
	if d, ok := s.out.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(time.Now()) == nil {
		<-s.done
	}
	return errStuck
}

// poke wakes the writer goroutine.
func (s *Sink) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// run writes the queue to the stream until Close, one batch at a time: all
// that was queued when it looked, then the note of what was dropped.
func (s *Sink) run() {
	defer close(s.done)
	var spare []byte
	for {
		s.mu.Lock()
		batch, dropped, waiters, closed := s.queued, s.dropped, s.waiters, s.closed
		s.queued, s.dropped, s.waiters = spare[:0], 0, nil
		last := closed && len(batch) == 0 && dropped == 0
		s.finished = last
		s.mu.Unlock()
		stuck := false
		if len(batch) > 0 {
			stuck = s.write(batch)
		}
		if dropped > 0 && !stuck {
			stuck = s.write(s.note(dropped))
		}
		for _, w := range waiters {
			close(w)
		}
		if stuck { // only after Close: the deadline ended the write
			s.mu.Lock()
			s.finished = true
			s.mu.Unlock()
			return
		}
		if last {
			return
		}
		spare = batch
		if cap(spare) > s.max {
			spare = nil // a burst's buffer is not kept for life
		}
		if len(batch) == 0 && dropped == 0 {
			<-s.wake
		}
	}
}

// write writes b to the stream and reports whether a deadline ended the
// write (Close gave up on the stream); any other error is ignored.
func (s *Sink) write(b []byte) (stuck bool) {
	_, err := s.out.Write(b)
	return errors.Is(err, os.ErrDeadlineExceeded)
}

// plainNote is the default note of n dropped entries.
func plainNote(n int) []byte {
	return []byte("log output too slow: " + strconv.Itoa(n) + " log entries dropped\n")
}
