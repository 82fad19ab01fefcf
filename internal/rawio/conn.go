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
	sc       syscall.Conn
	rw
}

// rw is a Reader and a Writer of one descriptor, each behind its lock.
type rw struct {
	rmu sync.Mutex // guards r; taken alone
	r   *Reader
	wmu sync.Mutex // guards w; taken alone
	w   *Writer
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
	return x.w.Write(p)
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
	rc := &Conn{Conn: c, sc: sc}
	if err := rc.init(sc); err != nil {
		return c
	}
	return rc
}

// Read reads as net.Conn's Read does; errors but io.EOF are *net.OpError.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.read(p)
	if err != nil && err != io.EOF {
		err = c.OpError("read", err)
	}
	return n, err
}

// Write writes all of p as net.Conn's Write does; errors are *net.OpError.
func (c *Conn) Write(p []byte) (int, error) {
	n, err := c.write(p)
	if err != nil {
		err = c.OpError("write", err)
	}
	return n, err
}

// SyscallConn is the socket's.
func (c *Conn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// CloseWrite shuts down the writing side of the socket.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// Unwrap returns the socket.
func (c *Conn) Unwrap() net.Conn { return c.Conn }

// OpError says err, an error of op ("read" or "write") on c, as the
// standard library's net.Conn would. An error of the socket's RawConn (it
// was closed, its deadline passed) is a *net.OpError already and is kept.
func (c *Conn) OpError(op string, err error) error {
	if _, ok := err.(*net.OpError); ok {
		return err
	}
	if errno, ok := err.(syscall.Errno); ok {
		err = os.NewSyscallError(op, errno)
	}
	return &net.OpError{Op: op, Net: c.LocalAddr().Network(), Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
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
