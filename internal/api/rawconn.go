package api

import (
	"io"
	"net"
	"syscall"

	"google.golang.org/grpc/mem"

	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// rawConn is an app's socket read and written with raw system calls
// (rawio.Conn): each read or write of gRPC's would otherwise wake the
// runtime's monitor thread whenever mcpd was idle before it. It keeps
// gRPC's readiness-based reads (ReadOnReady), which take a buffer from
// gRPC's pool only once the socket is readable, so that an idle app pins
// no buffer.
type rawConn struct {
	*rawio.Conn
	raw syscall.RawConn

	// Used by gRPC's one reader goroutine, within ReadOnReady.
	pool    mem.BufferPool
	bufSize int
	buf     *[]byte
	n       int
	err     error
	onReady func(fd uintptr) bool // c.readOnReady, bound once
}

// newRawConn wraps conn, or returns it as it is when it is not a socket.
func newRawConn(conn net.Conn) net.Conn {
	rc, ok := rawio.NewConn(conn).(*rawio.Conn)
	if !ok {
		return conn
	}
	raw, err := rc.SyscallConn()
	if err != nil {
		return conn
	}
	c := &rawConn{Conn: rc, raw: raw}
	c.onReady = c.readOnReady
	return c
}

// ReadOnReady is grpc-go's readiness-based read (its readyreader.Reader,
// which gRPC finds on the connection by its method set): it waits for the
// socket to be readable, then reads up to bufSize bytes into a buffer from
// pool. At the end of the stream it returns io.EOF.
func (c *rawConn) ReadOnReady(bufSize int, pool mem.BufferPool) (*[]byte, int, error) {
	c.bufSize, c.pool = bufSize, pool
	err := c.raw.Read(c.onReady)
	buf, n, rerr := c.buf, c.n, c.err
	c.buf, c.n, c.err, c.pool = nil, 0, nil, nil
	if err == nil && rerr == nil && n > 0 {
		return buf, n, nil
	}
	if buf != nil {
		pool.Put(buf)
	}
	switch {
	case err != nil:
		return nil, 0, c.OpError("read", err)
	case rerr != nil:
		return nil, 0, c.OpError("read", rerr)
	}
	return nil, 0, io.EOF
}

// readOnReady is ReadOnReady's RawConn callback: false (wait for the
// poller) while there is nothing to read, with the buffer given back.
func (c *rawConn) readOnReady(fd uintptr) bool {
	buf := c.pool.Get(c.bufSize)
	n, err := rawio.ReadOnce(fd, *buf)
	if err == syscall.EAGAIN {
		c.pool.Put(buf)
		return false
	}
	c.buf, c.n, c.err = buf, n, err
	return true
}
