package rawio

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
)

// Conn is a Unix or TCP socket whose Read and Write are raw system calls
// (a Reader and a Writer). Everything else (deadlines, Close, addresses,
// SyscallConn, CloseWrite) is the socket's own. Like any net.Conn it is
// safe for concurrent use.
type Conn struct {
	net.Conn // *net.UnixConn or *net.TCPConn
	raw      syscall.RawConn
	rw

	// ReadReady's, used by one reader at a time (gRPC's reader goroutine).
	ready readyRead
}

// rw is a Reader and a Writer of one descriptor, each behind its lock.
type rw struct {
	rmu sync.Mutex // guards r; taken alone
	r   *Reader
	wmu sync.Mutex // guards w, holding and held; taken alone
	w   *Writer
	// holding: writes are kept in held until release (hold).
	holding bool
	held    []byte
}

// init makes the Reader and Writer of c's descriptor.
func (x *rw) init(c syscall.Conn) (err error) {
	if x.r, err = NewReader(c); err != nil {
		return err
	}
	x.w, err = NewWriter(c)
	return err
}

func (x *rw) read(p []byte) (int, error) {
	x.rmu.Lock()
	defer x.rmu.Unlock()
	return x.r.Read(p)
}

func (x *rw) write(p []byte) (int, error) {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	if x.holding {
		x.held = append(x.held, p...)
		return len(p), nil
	}
	return x.w.Write(p)
}

// maxHeld bounds the buffer kept for the next Hold: a rare huge answer's
// is left to the collector.
const maxHeld = 256 << 10

// hold makes writes keep what they are given, in order, until release
// writes it all.
func (x *rw) hold() {
	x.wmu.Lock()
	x.holding = true
	x.wmu.Unlock()
}

// release writes what was held, in one write, and stops holding.
func (x *rw) release() error {
	x.wmu.Lock()
	defer x.wmu.Unlock()
	x.holding = false
	if len(x.held) == 0 {
		return nil
	}
	_, err := x.w.Write(x.held)
	if cap(x.held) > maxHeld {
		x.held = nil
	} else {
		x.held = x.held[:0]
	}
	return err
}

// NewConn wraps c when it is a *net.UnixConn or a *net.TCPConn, and
// returns any other connection (a wrapper, a pipe) as it is.
func NewConn(c net.Conn) net.Conn {
	switch c.(type) {
	case *net.UnixConn, *net.TCPConn:
	default:
		return c
	}
	sc := c.(syscall.Conn)
	raw, err := sc.SyscallConn()
	if err != nil {
		return c
	}
	rc := &Conn{Conn: c, raw: raw}
	if err := rc.init(sc); err != nil {
		return c
	}
	rc.ready.read = rc.ready.readOnce
	return rc
}

// Read reads as net.Conn's Read does; errors but io.EOF are *net.OpError.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	if err != nil && err != io.EOF {
		err = c.opError("read", err)
	}
	return n, err
}

// Write writes all of p as net.Conn's Write does; errors are *net.OpError.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.write(p)
	if err != nil {
		err = c.opError("write", err)
	}
	return n, err
}

// Hold makes Write keep what it is given, in order, until Release writes
// it all with one system call: an answer its writer gives in pieces
// (net/http gives one over its 4 KB buffer in two) reaches the peer in
// one write(2). Only the holder may write meanwhile.
func (c *Conn) Hold() { c.hold() }

// Release writes what was held since Hold, in one write, and stops
// holding; its error is a *net.OpError.
func (c *Conn) Release() error {
	if err := c.release(); err != nil {
		return c.opError("write", err)
	}
	return nil
}

// SyscallConn is the socket's.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.raw, nil }

// CloseWrite shuts down the writing side of the socket.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// BufferPool is where ReadReady takes its buffers (grpc-go's
// mem.BufferPool has this method set).
type BufferPool interface {
	Get(length int) *[]byte
	Put(*[]byte)
}

// readyRead is the state of ReadReady's RawConn callback.
type readyRead struct {
	pool BufferPool
	size int
	buf  *[]byte
	n    int
	err  error
	bulk bool                  // the last read was a bulk one
	read func(fd uintptr) bool // readOnce, bound once
}

// readOnce takes a buffer and reads into it; on EAGAIN it gives the buffer
// back and asks the poller to wait.
func (s *readyRead) readOnce(fd uintptr) bool {
	buf := s.pool.Get(s.size)
	n, err := readFD(fd, *buf, s.bulk)
	if err == syscall.EAGAIN {
		s.pool.Put(buf)
		return false
	}
	s.buf, s.n, s.err = buf, n, err
	return true
}

// ReadReady waits for the socket to be readable, then reads up to size
// bytes into a buffer from pool, which the caller owns (and puts back)
// when n > 0. No buffer is held while it waits, so an idle connection pins
// none. At the end of the stream it returns io.EOF. It is grpc-go's
// readiness-based read (its readyreader.Reader); one goroutine may call it
// at a time.
func (c *Conn) ReadReady(size int, pool BufferPool) (*[]byte, int, error) {
	s := &c.ready
	s.pool, s.size = pool, size
	err := c.raw.Read(s.read)
	buf, n, rerr := s.buf, s.n, s.err
	s.pool, s.buf, s.n, s.err = nil, nil, 0, nil
	s.bulk = n >= BulkSize
	if err == nil && rerr == nil && n > 0 {
		return buf, n, nil
	}
	if buf != nil {
		pool.Put(buf)
	}
	switch {
	case err != nil:
		return nil, 0, c.opError("read", err)
	case rerr != nil:
		return nil, 0, c.opError("read", rerr)
	}
	return nil, 0, io.EOF
}

// opError says err, an error of op ("read" or "write") on c, as the
// standard library's net.Conn would. An error of the socket's RawConn (it
// was closed, its deadline passed) is a *net.OpError already, made for
// this call: it is given op's name.
func (c *Conn) opError(op string, err error) error {
	if oe, ok := err.(*net.OpError); ok {
		oe.Op = op
		return oe
	}
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	oe := &net.OpError{Op: op, Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	if oe.Source != nil {
		oe.Net = oe.Source.Network()
	}
	return oe
}

// NewListener returns ln whose accepted sockets are Conns.
func NewListener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return NewConn(c), nil
}
