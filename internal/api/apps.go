package api

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"

	"github.com/mcpd-dev/mcpd/internal/core"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/peer"
)

// trackCredentials wraps the server credentials (PeerCredentials) so that
// every accepted connection is registered as an app of svc; its calls find
// it through the peer's AuthInfo (appOf). The service learns of
// connections in the handshake rather than from a stats.Handler: with one
// installed, gRPC builds stats events and copies the metadata for every
// RPC, which is most of what an idle app tracker would cost on the call
// path.
func trackCredentials(svc *core.Service, inner credentials.TransportCredentials) credentials.TransportCredentials {
	return &trackingCreds{TransportCredentials: inner, svc: svc}
}

// trackingCreds registers connections as their handshake succeeds.
type trackingCreds struct {
	credentials.TransportCredentials
	svc *core.Service
}

// ServerHandshake runs the inner handshake and registers the connection.
// A connection of a kind whose closing cannot be seen from its file
// descriptor is wrapped to see its Close; a Unix socket is returned as a
// rawConn, read and written with raw system calls and still read by gRPC
// with its pooled, readiness-based reader.
func (c *trackingCreds) ServerHandshake(raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	conn, ai, err := c.TransportCredentials.ServerHandshake(raw)
	if err != nil {
		return conn, ai, err
	}
	a, ok := ai.(AuthInfo)
	if !ok {
		return conn, ai, nil
	}
	open := fdOpen(conn)
	if open == nil {
		wrapped := &closeNotifyConn{Conn: conn}
		open = func() bool { return !wrapped.closed.Load() }
		conn = wrapped
	}
	a.app = c.svc.NewSocketApp(a.UID, a.PID, open)
	return newRawConn(conn), a, nil
}

// Clone implements credentials.TransportCredentials.
func (c *trackingCreds) Clone() credentials.TransportCredentials {
	return &trackingCreds{TransportCredentials: c.TransportCredentials.Clone(), svc: c.svc}
}

// fdOpen returns a func reporting whether conn's file descriptor is still
// open (gRPC closes it when the connection ends), or nil when conn has no
// descriptor to ask.
func fdOpen(conn net.Conn) func() bool {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return nil
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	// Control fails with net.ErrClosed once the descriptor was closed.
	return func() bool { return raw.Control(func(uintptr) {}) == nil }
}

// closeNotifyConn records that it was closed.
type closeNotifyConn struct {
	net.Conn
	closed atomic.Bool
}

func (c *closeNotifyConn) Close() error {
	c.closed.Store(true)
	return c.Conn.Close()
}

// appOf is the app of the connection a gRPC call arrived on; nil when
// its handshake registered none.
func appOf(ctx context.Context) *core.App {
	p, ok := peer.FromContext(ctx)
	if !ok {
		return nil
	}
	a, _ := p.AuthInfo.(AuthInfo)
	return a.app
}
