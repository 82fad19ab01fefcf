package api

import (
	"net"

	"google.golang.org/grpc/mem"

	"github.com/mcpd-dev/mcpd/internal/rawio"
)

// rawConn is an app's socket read and written with raw system calls
// (rawio.Conn): each read or write of gRPC's would otherwise wake the
// runtime's monitor thread whenever mcpd was idle before it. gRPC finds
// ReadOnReady on it by its method set and reads it by readiness, from its
// pool, so that an idle app pins no buffer.
type rawConn struct{ *rawio.Conn }

// newRawConn wraps conn, or returns it as it is when it is not a socket.
func newRawConn(conn net.Conn) net.Conn {
	if rc, ok := rawio.NewConn(conn).(*rawio.Conn); ok {
		return rawConn{rc}
	}
	return conn
}

// ReadOnReady is grpc-go's readiness-based read (its readyreader.Reader):
// rawio.Conn.ReadReady.
func (c rawConn) ReadOnReady(bufSize int, pool mem.BufferPool) (*[]byte, int, error) {
	return c.ReadReady(bufSize, pool)
}
