package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// This file writes to the child's stdin. A child that stops reading fills
// the pipe, and a plain Write would then block for as long as the child
// likes, taking every later writer with it. Instead:
//
//   - Writers take the write lock (a channel, so a writer waiting for it
//     gives up when its ctx ends) and try one non-blocking write(2) through
//     the pipe's RawConn. When the pipe has room, which is the common case,
//     that is all: no deadline, no timer, no goroutine.
//   - When the pipe is full the writer waits for room with a write deadline
//     (the pipe is non-blocking and in Go's poller, being an os.Pipe),
//     until its ctx ends or the pipe has accepted nothing for StdinTimeout.
//   - A message is never left half written for the next writer: a writer
//     whose ctx ends first hands the lock and the rest of its message (if
//     any was written) to a finisher goroutine, which completes it, or just
//     watches for room when none was written, under the same StdinTimeout.
//   - When the pipe has accepted nothing for StdinTimeout the child is
//     hung: it is killed, and every write from then on returns an error
//     wrapping ErrHung (see Hung).

// DefaultStdinTimeout is used when Options.StdinTimeout is zero.
const DefaultStdinTimeout = 10 * time.Second

// ErrHung is matched (errors.Is) by the error of every write once the
// child has not read its stdin for StdinTimeout while mcpd had something to
// send it; the child is then killed.
var ErrHung = errors.New("transport: server stopped reading its stdin")

// hungError says which server stopped reading for how long; it is ErrHung.
type hungError struct{ msg string }

func (e *hungError) Error() string        { return e.msg }
func (e *hungError) Is(target error) bool { return target == ErrHung }

// aLongTimeAgo is a write deadline that has passed: setting it interrupts
// a write waiting for room.
var aLongTimeAgo = time.Unix(1, 0)

// writer is the write side of a Process. Holding lock (a token in the
// channel) guards every field but hung and finMu's.
type writer struct {
	lock chan struct{} // capacity 1

	buf  []byte   // the message being written, kept for reuse
	rest []byte   // the part of buf (or of a large message) not written yet
	more [][]byte // written after rest, in order: a large message's other parts and newline
	// wait makes tryWrite ask the poller to wait for room on EAGAIN;
	// progress is set by tryWrite when it wrote anything; err is the
	// write error it met.
	wait, progress bool
	err            error
	// stallSince is when the pipe was first found full without accepting
	// anything since; zero when it was not full at the last write.
	stallSince time.Time
	timeout    time.Duration

	raw      syscall.RawConn
	tryWrite func(fd uintptr) bool // p.writeSome, bound once
	writable func(fd uintptr) bool // pollWritable

	hung chan struct{} // closed once hungErr is set
	// hungOnce guards hungErr, which is written once, before hung is closed.
	hungOnce sync.Once
	hungErr  error

	finMu     sync.Mutex // guards finClosed and finishers.Add
	finClosed bool       // set by the waiter: no finisher may start any more
	finishers sync.WaitGroup
}

// initWriter sets up the write side on the parent's end of the stdin pipe.
func (p *Process) initWriter(timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultStdinTimeout
	}
	raw, err := p.stdinW.SyscallConn()
	if err != nil {
		return fmt.Errorf("start %q: stdin pipe: %w", p.name, err)
	}
	p.w = writer{
		lock:     make(chan struct{}, 1),
		timeout:  timeout,
		raw:      raw,
		writable: pollWritable,
		hung:     make(chan struct{}),
	}
	p.w.tryWrite = p.writeSome
	return nil
}

// WriteMessage writes msg (one compact JSON value, no newline) followed by
// "\n" to the child's stdin, waiting no longer than ctx allows. It returns
// an error wrapping ErrClosed once stdin is closed (a broken pipe too), one
// wrapping ErrHung once the child was found hung, and ctx's error when ctx
// ends before the message was written.
//
// Messages never interleave: the message and its "\n" go out under a write
// lock, and a message whose writer gave up half way is completed by the
// Process before any other. If msg contains a raw newline (pretty-printed
// JSON from an app), it is compacted first: "a message must not contain a
// raw newline"; if it then is not valid JSON, an error is returned and
// nothing is written. A large msg is written in place, and may still be
// being written after WriteMessage returned (completed for a writer that
// gave up): the caller must not modify msg after the call.
func (p *Process) WriteMessage(ctx context.Context, msg []byte) error {
	return p.writeMessage(ctx, msg, nil)
}

// WriteMessageParts is WriteMessage for the message that is the
// concatenation of parts. Large parts are written in place, each with its
// own write(2), so that a caller can send a large app payload as a slice of
// the app's own request between small encoded parts, without copying it
// into one buffer; the same rule applies: the caller must not modify any
// part after the call.
func (p *Process) WriteMessageParts(ctx context.Context, parts [][]byte) error {
	if len(parts) == 0 {
		return p.writeMessage(ctx, nil, nil)
	}
	return p.writeMessage(ctx, parts[0], parts[1:])
}

// newlineOnly is the rest of a large message of one part.
var newlineOnly = [][]byte{newline}

// writeMessage writes the message first followed by others.
func (p *Process) writeMessage(ctx context.Context, first []byte, others [][]byte) error {
	if err := p.lockWrite(ctx); err != nil {
		return err
	}
	if err := p.unwritable(); err != nil {
		p.unlockWrite()
		return err
	}
	size, hasNewline := len(first), bytes.IndexByte(first, '\n') >= 0
	for _, part := range others {
		size += len(part)
		hasNewline = hasNewline || bytes.IndexByte(part, '\n') >= 0
	}
	buf := p.w.buf[:0]
	switch {
	case hasNewline:
		msg := first
		if len(others) > 0 {
			msg = bytes.Join(append([][]byte{first}, others...), nil)
		}
		w := bytes.NewBuffer(buf)
		if err := json.Compact(w, msg); err != nil {
			p.unlockWrite()
			return fmt.Errorf("write to %q: message with a newline is not valid json: %w", p.name, err)
		}
		buf = append(w.Bytes(), '\n')
	case size >= maxKeptWriteBuf:
		// A large message is written as it is, then its newline: copying
		// it to append one would cost its size again.
		buf, p.w.more = first, newlineOnly
		if len(others) > 0 {
			p.w.more = append(others[:len(others):len(others)], newline)
		}
	default:
		buf = append(buf, first...)
		for _, part := range others {
			buf = append(buf, part...)
		}
		buf = append(buf, '\n')
	}
	switch {
	case len(p.w.more) > 0: // buf is the caller's: keep p.w.buf
	case cap(buf) <= maxKeptWriteBuf:
		p.w.buf = buf[:0]
	default:
		p.w.buf = nil
	}
	p.w.rest = buf
	for len(p.w.rest) == 0 && len(p.w.more) > 0 { // an empty first part
		p.w.rest, p.w.more = p.w.more[0], p.w.more[1:]
	}
	size = p.w.unwritten()

	// Fast path: one non-blocking attempt.
	p.w.wait, p.w.err = false, nil
	err := p.w.raw.Write(p.w.tryWrite)
	switch {
	case err == nil && p.w.err == nil && p.w.unwritten() == 0:
		p.w.stallSince = time.Time{}
		p.w.rest, p.w.more = nil, nil
		p.unlockWrite()
		return nil
	case err == nil && p.w.err == nil:
		return p.writeStalled(ctx, size) // unlocks
	}
	p.w.rest, p.w.more = nil, nil
	p.unlockWrite()
	return p.writeError(cmpErr(err, p.w.err))
}

// unwritten is how many bytes of the message being written are left.
func (w *writer) unwritten() int {
	n := len(w.rest)
	for _, part := range w.more {
		n += len(part)
	}
	return n
}

// lockWrite takes the write lock, or gives up when ctx ends.
func (p *Process) lockWrite(ctx context.Context) error {
	select {
	case p.w.lock <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.w.lock <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("write to %q: waiting for its stdin: %w", p.name, ctx.Err())
	}
}

func (p *Process) unlockWrite() { <-p.w.lock }

// unwritable returns the error of a write that must not be tried: stdin
// closed or the child hung.
func (p *Process) unwritable() error {
	select {
	case <-p.w.hung:
		return p.w.hungErr
	default:
	}
	if p.stdinClosed.Load() {
		return fmt.Errorf("write to %q: %w", p.name, ErrClosed)
	}
	return nil
}

// Hung returns the error wrapping ErrHung if the child was found hung (not
// reading its stdin for StdinTimeout), nil otherwise.
func (p *Process) Hung() error {
	select {
	case <-p.w.hung:
		return p.w.hungErr
	default:
		return nil
	}
}

// writeStalled finishes the write of p.w.rest, size bytes in all, on a full
// pipe; it is called and returns with the write lock held, but releases it
// before returning, or hands it to a finisher.
func (p *Process) writeStalled(ctx context.Context, size int) error {
	if p.w.stallSince.IsZero() {
		p.w.stallSince = time.Now()
	}
	g := newWriteGuard(ctx, p.stdinW)
	err := p.waitStall(g)
	g.release()
	if !errors.Is(err, errGaveUp) {
		p.w.rest, p.w.more = nil, nil
		p.unlockWrite()
		return err
	}
	// ctx ended first. A message the pipe took none of is dropped; the
	// rest of one it took a part of must be written before any other.
	if p.w.unwritten() == size {
		p.w.rest, p.w.more = nil, nil
	}
	p.handOff()
	return fmt.Errorf("write to %q: its stdin is full: %w", p.name, ctx.Err())
}

// errGaveUp is waitStall's error when its guard's ctx ended.
var errGaveUp = errors.New("gave up")

// waitStall writes p.w.rest and p.w.more, or when they are empty waits
// for room in the pipe, while the pipe accepts something at least every StdinTimeout. It
// returns nil when done, errGaveUp when g's ctx ended, the hung error when
// the child stopped reading, or a write error. Write lock held.
func (p *Process) waitStall(g *writeGuard) error {
	for {
		hungAt := p.w.stallSince.Add(p.w.timeout)
		if !g.set(hungAt) {
			return errGaveUp
		}
		var err error
		if p.w.unwritten() > 0 {
			p.w.wait, p.w.progress, p.w.err = true, false, nil
			err = cmpErr(p.w.raw.Write(p.w.tryWrite), p.w.err)
			if p.w.progress {
				p.w.stallSince = time.Now()
			}
		} else {
			err = p.w.raw.Write(p.w.writable)
		}
		switch {
		case err == nil && p.w.unwritten() == 0:
			p.w.stallSince = time.Time{}
			return nil
		case err == nil:
			continue // progress, then full again: a new StdinTimeout
		case !errors.Is(err, os.ErrDeadlineExceeded):
			return p.writeError(err)
		case !time.Now().Before(hungAt):
			return p.hang()
		default:
			return errGaveUp // interrupted by g
		}
	}
}

// handOff passes the write lock, with p.w.rest, to a finisher goroutine,
// which completes the rest or watches for room in the pipe, so that a
// child that stays stuck is found hung even when nobody writes any more.
func (p *Process) handOff() {
	p.w.finMu.Lock()
	defer p.w.finMu.Unlock()
	if p.w.finClosed {
		// The child exited and stdin is being closed: nothing to finish.
		p.w.rest, p.w.more = nil, nil
		p.unlockWrite()
		return
	}
	p.w.finishers.Add(1)
	go func() {
		defer p.w.finishers.Done()
		g := newWriteGuard(context.Background(), p.stdinW)
		err := p.waitStall(g)
		g.release()
		if err != nil {
			p.log.Debug("finishing a write to stdin", zap.Error(err))
		}
		p.w.rest, p.w.more = nil, nil
		p.unlockWrite()
	}()
}

// stopFinishers waits for the finisher, if any, and lets no other start;
// the waiter calls it after closing stdin, which ends a finisher's wait.
func (p *Process) stopFinishers() {
	p.w.finMu.Lock()
	p.w.finClosed = true
	p.w.finMu.Unlock()
	p.w.finishers.Wait()
}

// hang records that the child is hung and kills it. It returns the error
// every write reports from now on.
func (p *Process) hang() error {
	p.w.hungOnce.Do(func() {
		p.w.hungErr = &hungError{fmt.Sprintf("server %q stopped reading its stdin for %s", p.name, p.w.timeout)}
		close(p.w.hung)
		p.log.Warn("child stopped reading its stdin; killing it", zap.Duration("stdin_timeout", p.w.timeout))
		p.Kill()
	})
	return p.w.hungErr
}

// writeSome writes as much of p.w.rest, then of p.w.more, as the pipe
// takes. On EAGAIN it
// asks the poller to wait for room (returns false) only in the slow path
// (p.w.wait) and when nothing was written yet, so that the caller can note
// the progress.
func (p *Process) writeSome(fd uintptr) bool {
	for len(p.w.rest) > 0 {
		n, err := rawio.WriteOnce(fd, p.w.rest)
		if n > 0 {
			p.w.rest = p.w.rest[n:]
			p.w.progress = true
		}
		for len(p.w.rest) == 0 && len(p.w.more) > 0 {
			p.w.rest, p.w.more = p.w.more[0], p.w.more[1:]
		}
		switch {
		case err == nil, errors.Is(err, syscall.EINTR):
		case errors.Is(err, syscall.EAGAIN):
			return !p.w.wait || p.w.progress
		default:
			p.w.err = err
			return true
		}
	}
	return true
}

// pollWritable reports whether the pipe fd has room (or its reader is
// gone, which the next write reports).
func pollWritable(fd uintptr) bool { return pollNow(fd, unix.POLLOUT) }

// pollNow reports whether fd is ready for events now, without waiting; a
// poll error other than EINTR counts as ready, so that the caller's next
// system call meets and reports it.
func pollNow(fd uintptr, events int16) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err != nil || n > 0
	}
}

// writeError wraps a write error: os.ErrClosed (stdin closed under us),
// poll's "use of closed file" and EPIPE (the child closed its stdin) are
// ErrClosed.
func (p *Process) writeError(err error) error {
	if errors.Is(err, ErrHung) {
		return err
	}
	if errors.Is(err, os.ErrClosed) || errors.Is(err, syscall.EPIPE) || p.stdinClosed.Load() {
		return fmt.Errorf("write to %q: %w", p.name, ErrClosed)
	}
	return fmt.Errorf("write to %q: %w", p.name, err)
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// writeGuard sets the write deadline of a slow-path write and interrupts
// it when ctx ends; after release it touches the deadline no more.
type writeGuard struct {
	f    *os.File
	stop func() bool

	mu   sync.Mutex // guards over and the file's write deadline
	over bool       // ctx ended or released
}

func newWriteGuard(ctx context.Context, f *os.File) *writeGuard {
	g := &writeGuard{f: f}
	if ctx.Done() != nil {
		g.stop = context.AfterFunc(ctx, g.interrupt)
	}
	return g
}

func (g *writeGuard) interrupt() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.over {
		g.over = true
		_ = g.f.SetWriteDeadline(aLongTimeAgo)
	}
}

// set sets the write deadline to d; false if ctx has ended.
func (g *writeGuard) set(d time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.over {
		return false
	}
	_ = g.f.SetWriteDeadline(d)
	return true
}

// release clears the deadline, so that the next write's fast path finds
// none.
func (g *writeGuard) release() {
	if g.stop != nil {
		g.stop()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.over = true
	_ = g.f.SetWriteDeadline(time.Time{})
}
