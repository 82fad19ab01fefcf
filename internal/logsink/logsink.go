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
//
// Close writes the queue (mcpd calls it at a clean stop, SIGTERM or
// SIGINT). A SIGKILL loses what the sink took and had not written yet,
// which MaxQueued bounds (the batch being written counts against it too);
// with a stream that keeps up, that is the entries of the last moment. The
// queue is written in runs of whole entries of at most PIPE_BUF bytes, so a
// kill leaves no entry cut on a pipe.
package logsink

import (
	"bytes"
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

	mu           sync.Mutex      // guards following
	queued       []byte          // whole entries, in order
	writing      int             // bytes of the batch taken from queued not yet on the stream
	dropped      int             // entries dropped since the last note
	droppedTotal int             // entries dropped in all (tests)
	waiters      []chan struct{} // Sync calls, closed once what precedes them is written
	closed       bool            // Close was called: the writer ends once the queue is out
	finished     bool            // the writer took its last batch: writes go to the stream
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
	if len(s.queued)+s.writing+len(p) > s.max { // MaxQueued bounds what a SIGKILL loses
		s.dropped++
		s.droppedTotal++
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
		s.writing = len(batch)
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

// atomicWrite is the most a write(2) to a pipe writes whole or not at all
// (PIPE_BUF on Linux): the batch is written in runs of whole entries up to
// this size, so that a process killed during a write leaves no entry cut
// on the stream (an entry longer than this is written alone, and may be).
const atomicWrite = 4096

// write writes b, whole entries, to the stream in runs of up to
// atomicWrite bytes, and reports whether a deadline ended a write (Close
// gave up on the stream); any other error is ignored. What is written no
// longer counts against MaxQueued.
func (s *Sink) write(b []byte) (stuck bool) {
	for len(b) > 0 {
		n := len(b)
		if n > atomicWrite {
			n = bytes.LastIndexByte(b[:atomicWrite], '\n') + 1
			if n == 0 { // one entry longer than atomicWrite
				if n = bytes.IndexByte(b, '\n') + 1; n == 0 {
					n = len(b)
				}
			}
		}
		_, err := s.out.Write(b[:n])
		b = b[n:]
		s.mu.Lock()
		s.writing = max(0, s.writing-n)
		s.mu.Unlock()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return true
		}
	}
	return false
}

// plainNote is the default note of n dropped entries.
func plainNote(n int) []byte {
	return []byte("log output too slow: " + strconv.Itoa(n) + " log entries dropped\n")
}
