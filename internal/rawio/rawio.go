// Package rawio reads and writes non-blocking file descriptors that are in
// Go's poller (sockets and pipes) with raw system calls.
//
// A read or write through os.File or net.Conn enters the system call as a
// blocking one would: the runtime marks the goroutine's P as in a system
// call, and when every P was idle before it (a daemon waiting for its next
// request, or for a child's answer) it wakes the runtime's monitor thread
// (sysmon) from its deep sleep, so that the monitor could take the P back
// should the call block. On a non-blocking descriptor the call never
// blocks: it copies what fits and says EAGAIN. mcpd goes idle and wakes two
// or three times per relayed call, and those wake-ups (a futex wake, and
// the monitor's thread running its 20 µs polling loop before it sleeps
// again) were a fifth of its CPU per call.
//
// The functions here make the same read(2) and write(2) as the standard
// library, through the descriptor's syscall.RawConn (so deadlines, closing
// and the poller's waiting work as before), but without the scheduler's
// system-call hooks. Constructors take only a socket or a pipe in
// non-blocking mode (ErrBlocking otherwise): anything else could hold a P,
// and stop the world at the next GC, for as long as the kernel takes. The
// one exception is NewFileWriter's regular file on a local disk, whose
// small appends are copies into the page cache, and which goes back to the
// standard calls after a write that took long.
//
// Bulk transfers (BulkSize or more in one read or write) keep the standard
// path: the monitor then stays awake while a large message is moved and
// processed, so that it can preempt a goroutine that runs long (its other
// duty), and its wake-up costs little per byte.
//
// Builds with the race detector (or msan, asan) use the standard calls
// throughout: they tell the detector that what one goroutine wrote to a
// descriptor happens before another goroutine's read of it.
package rawio

import (
	"errors"
	"fmt"
	"io"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// BulkSize is the size of a read or write from which the standard
// library's system call is used.
const BulkSize = 16 << 10

// ErrBlocking is returned for a descriptor that is not a socket or a pipe
// in non-blocking mode.
var ErrBlocking = errors.New("rawio: not a non-blocking socket or pipe")

// Reader reads a non-blocking descriptor through its RawConn. It is not
// safe for concurrent use.
type Reader struct {
	rc       syscall.RawConn
	p        []byte
	n        int
	err      error
	bulk     bool                  // the last read was a bulk one
	readSome func(fd uintptr) bool // r.readOnce, bound once
}

// NewReader returns a Reader of c's descriptor (ErrBlocking unless it is a
// non-blocking socket or pipe).
func NewReader(c syscall.Conn) (*Reader, error) {
	rc, err := nonBlocking(c)
	if err != nil {
		return nil, err
	}
	r := &Reader{rc: rc}
	r.readSome = r.readOnce
	return r, nil
}

func (r *Reader) readOnce(fd uintptr) bool {
	r.n, r.err = readFD(fd, r.p, r.bulk)
	return r.err != syscall.EAGAIN
}

// Read reads up to len(p) bytes once the descriptor is readable; at the
// end of the stream it returns io.EOF. Errors of the descriptor (closed,
// past its deadline) are the RawConn's.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	err := r.rc.Read(r.readSome)
	n, rerr := r.n, r.err
	r.p, r.n, r.err = nil, 0, nil
	r.bulk = n >= BulkSize
	switch {
	case err != nil:
		return 0, err
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Writer writes a descriptor through its RawConn, waiting in the poller
// while it is full. It is not safe for concurrent use.
type Writer struct {
	rc        syscall.RawConn
	rest      []byte
	err       error
	bulk      bool                  // the message is a bulk one
	writeSome func(fd uintptr) bool // w.writeOnce, bound once

	// slow, when set, is how long a raw write may take before the Writer
	// uses the standard calls until stdUntil (SlowFileBackoff later).
	slow     time.Duration
	stdUntil time.Time
}

// NewWriter returns a Writer of c's descriptor (ErrBlocking unless it is a
// non-blocking socket or pipe).
func NewWriter(c syscall.Conn) (*Writer, error) {
	rc, err := nonBlocking(c)
	if err != nil {
		return nil, err
	}
	return newWriter(rc), nil
}

func newWriter(rc syscall.RawConn) *Writer {
	w := &Writer{rc: rc}
	w.writeSome = w.writeOnce
	return w
}

func (w *Writer) writeOnce(fd uintptr) bool {
	for len(w.rest) > 0 {
		n, err := writeFD(fd, w.rest, w.bulk)
		w.rest = w.rest[n:]
		switch {
		case err == syscall.EAGAIN:
			return false
		case err != nil:
			w.err = err
			return true
		case n == 0:
			w.err = io.ErrUnexpectedEOF // as os.File says of a write that took nothing
			return true
		}
	}
	return true
}

// Write writes all of p, or returns how much it wrote and why not.
func (w *Writer) Write(p []byte) (int, error) {
	w.rest, w.bulk = p, len(p) >= BulkSize
	var start time.Time
	if w.slow > 0 && !w.bulk {
		if start = time.Now(); start.Before(w.stdUntil) {
			w.bulk, start = true, time.Time{}
		}
	}
	err := w.rc.Write(w.writeSome)
	if !start.IsZero() {
		if now := time.Now(); now.Sub(start) >= w.slow {
			w.stdUntil = now.Add(SlowFileBackoff)
		}
	}
	n := len(p) - len(w.rest)
	werr := w.err
	w.rest, w.err = nil, nil
	if err == nil {
		err = werr
	}
	return n, err
}

// readFD makes one attempt to read into p from fd, a non-blocking
// descriptor (inside a RawConn callback): syscall.EAGAIN when there is
// nothing to read, 0 and nil at the end of the stream. With std (the last
// read of fd was a bulk one) it takes the standard path.
func readFD(fd uintptr, p []byte, std bool) (int, error) {
	return once(fd, p, std, stdRead, sysRead)
}

// WriteOnce makes one attempt to write p to fd, a non-blocking descriptor
// (inside a RawConn callback): it returns how much the descriptor took,
// with syscall.EAGAIN when it was full. A bulk p takes the standard path.
func WriteOnce(fd uintptr, p []byte) (int, error) {
	return writeFD(fd, p, len(p) >= BulkSize)
}

func writeFD(fd uintptr, p []byte, std bool) (int, error) {
	return once(fd, p, std, stdWrite, sysWrite)
}

// once makes the call stdCall with std, else sysCall, again while it is
// interrupted.
func once(fd uintptr, p []byte, std bool, stdCall, sysCall func(uintptr, []byte) (int, error)) (int, error) {
	call := sysCall
	if std {
		call = stdCall
	}
	for {
		n, err := call(fd, p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// nonBlocking returns c's RawConn if its descriptor is a socket or a pipe
// in non-blocking mode.
func nonBlocking(c syscall.Conn) (syscall.RawConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var flags int
	var st unix.Stat_t
	var ferr error
	if err := rc.Control(func(fd uintptr) {
		if ferr = unix.Fstat(int(fd), &st); ferr == nil {
			flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0)
		}
	}); err != nil {
		return nil, err
	}
	if ferr != nil {
		return nil, fmt.Errorf("rawio: %w", ferr)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFSOCK, unix.S_IFIFO:
	default:
		return nil, ErrBlocking
	}
	if flags&unix.O_NONBLOCK == 0 {
		return nil, ErrBlocking
	}
	return rc, nil
}
