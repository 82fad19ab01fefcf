// Package rawio reads and writes non-blocking file descriptors that are in
// Go's poller (sockets and pipes) with raw system calls.
//
// A read or write through os.File or net.Conn enters the system call the
// way a blocking one does: the runtime marks the goroutine's P as in a
// system call, and when every P was idle before it (a daemon waiting for
// its next request, or for a child's answer) it wakes the runtime's
// monitor thread (sysmon) from its deep sleep, so that the monitor could
// take the P back should the call block. On a non-blocking descriptor the
// call never blocks: it copies what fits and says EAGAIN. mcpd goes idle
// and wakes two or three times per relayed call, and those wake-ups (a
// futex wake, and the monitor's thread running its 20 µs polling loop
// before it sleeps again) were a fifth of its CPU per call.
//
// The functions here make the same read(2) and write(2) as the standard
// library, through the descriptor's syscall.RawConn (so deadlines, closing
// and the poller's waiting work as before), but without the scheduler's
// system-call hooks. Constructors refuse a descriptor that is not
// non-blocking, which would hold a P for as long as the kernel takes; the
// one exception is NewFileWriter's regular file on a local disk, whose
// small appends are copies into the page cache.
//
// Bulk transfers (BulkSize or more in one read or write) keep the
// standard path: the monitor then stays awake while a large message is
// moved and processed, so that it can preempt a goroutine that runs long
// (the monitor's other duty), and its wake-up costs little per byte.
//
// With the race detector the standard library's calls are used throughout:
// they tell it that what one goroutine wrote to a descriptor happens before
// another goroutine's read of it.
package rawio

import (
	"errors"
	"fmt"
	"io"
	"syscall"

	"golang.org/x/sys/unix"
)

// BulkSize is the size of a read or write from which the standard
// library's system call is used.
const BulkSize = 16 << 10

// ErrBlocking is returned for a descriptor in blocking mode.
var ErrBlocking = errors.New("rawio: descriptor is in blocking mode")

// Reader reads a non-blocking descriptor through its RawConn. It is not
// safe for concurrent use.
type Reader struct {
	rc   syscall.RawConn
	p    []byte
	n    int
	err  error
	bulk bool                  // the last read was a bulk one: use the standard path
	read func(fd uintptr) bool // r.readSome, bound once
}

// NewReader returns a Reader of c's descriptor, which must be
// non-blocking (ErrBlocking otherwise).
func NewReader(c syscall.Conn) (*Reader, error) {
	rc, err := nonBlocking(c)
	if err != nil {
		return nil, err
	}
	r := &Reader{rc: rc}
	r.read = r.readSome
	return r, nil
}

func (r *Reader) readSome(fd uintptr) bool {
	for {
		if r.bulk {
			r.n, r.err = hookedRead(fd, r.p)
		} else {
			r.n, r.err = read(fd, r.p)
		}
		if r.err != syscall.EINTR {
			return r.err != syscall.EAGAIN
		}
	}
}

// Read reads up to len(p) bytes once the descriptor is readable; at the
// end of the stream it returns io.EOF. Errors of the descriptor (closed,
// past its deadline) are the RawConn's.
func (r *Reader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.p = p
	err := r.rc.Read(r.read)
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

// Writer writes a non-blocking descriptor through its RawConn, waiting in
// the poller while it is full. It is not safe for concurrent use.
type Writer struct {
	rc    syscall.RawConn
	rest  []byte
	err   error
	bulk  bool                  // the message is a bulk one: use the standard path
	write func(fd uintptr) bool // w.writeSome, bound once
}

// NewWriter returns a Writer of c's descriptor, which must be non-blocking
// (ErrBlocking otherwise).
func NewWriter(c syscall.Conn) (*Writer, error) {
	rc, err := nonBlocking(c)
	if err != nil {
		return nil, err
	}
	return newWriter(rc), nil
}

func newWriter(rc syscall.RawConn) *Writer {
	w := &Writer{rc: rc}
	w.write = w.writeSome
	return w
}

func (w *Writer) writeSome(fd uintptr) bool {
	for len(w.rest) > 0 {
		var n int
		var err error
		if w.bulk {
			n, err = hookedWrite(fd, w.rest)
		} else {
			n, err = write(fd, w.rest)
		}
		if n > 0 {
			w.rest = w.rest[n:]
		}
		switch err {
		case nil, syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			w.err = err
			return true
		}
	}
	return true
}

// Write writes all of p, or returns how much it wrote and why not.
func (w *Writer) Write(p []byte) (int, error) {
	w.rest, w.bulk = p, len(p) >= BulkSize
	err := w.rc.Write(w.write)
	n := len(p) - len(w.rest)
	werr := w.err
	w.rest, w.err = nil, nil
	if err == nil {
		err = werr
	}
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	return n, err
}

// WriteOnce makes one attempt to write p to fd, a non-blocking descriptor
// (inside a RawConn callback): it returns how much the descriptor took,
// with syscall.EAGAIN when it was full. A bulk p takes the standard path.
func WriteOnce(fd uintptr, p []byte) (int, error) {
	for {
		var n int
		var err error
		if len(p) >= BulkSize {
			n, err = hookedWrite(fd, p)
		} else {
			n, err = write(fd, p)
		}
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// ReadOnce makes one attempt to read into p from fd, a non-blocking
// descriptor (inside a RawConn callback): syscall.EAGAIN when there is
// nothing to read, 0 and nil at the end of the stream.
func ReadOnce(fd uintptr, p []byte) (int, error) {
	for {
		n, err := read(fd, p)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// nonBlocking returns c's RawConn if its descriptor is non-blocking.
func nonBlocking(c syscall.Conn) (syscall.RawConn, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var flags int
	var ferr error
	if err := rc.Control(func(fd uintptr) { flags, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil {
		return nil, err
	}
	if ferr != nil {
		return nil, fmt.Errorf("rawio: fcntl: %w", ferr)
	}
	if flags&unix.O_NONBLOCK == 0 {
		return nil, ErrBlocking
	}
	return rc, nil
}
