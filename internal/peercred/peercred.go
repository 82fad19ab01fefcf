// Package peercred checks who is at the other end of a connection: it
// reads the peer's uid and pid from the kernel (a Unix socket's
// SO_PEERCRED, a loopback TCP peer socket's owner) and refuses connections
// of any user but the daemon's own, for the API socket's gRPC handshake,
// the HTTP face and plain listeners such as the metrics listener.
package peercred

import (
	"errors"
	"fmt"
	"net"
	"os"

	"go.uber.org/zap"
)

// ErrRejected is returned for a connection whose peer is not the wanted
// user.
var ErrRejected = errors.New("peercred: peer rejected")

// Get returns the uid and pid of the process at the other end of conn: for
// a Unix socket as the kernel recorded them at connect(2); for a loopback
// TCP connection this process accepted, the uid owning the peer socket
// (pid 0: unknown). It fails on platforms without SO_PEERCRED (TCP: off
// Linux) and for other connections.
func Get(conn net.Conn) (uid, pid int, err error) {
	if _, ok := conn.LocalAddr().(*net.TCPAddr); ok {
		uid, err := tcpPeerUID(conn)
		return uid, 0, err
	}
	return peerUcred(conn)
}

// Wanted is the uid a listener wants: want, or for a negative want (an
// option left unset) the daemon's own effective uid.
func Wanted(want int) int {
	if want < 0 {
		return os.Geteuid()
	}
	return want
}

// Check reports an error wrapping ErrRejected unless uid is want.
func Check(uid, want int) error {
	if uid != want {
		return fmt.Errorf("%w: uid %d is not the daemon's uid %d", ErrRejected, uid, want)
	}
	return nil
}

// Verify reads conn's peer credentials and checks them against wantUID.
// On failure it logs the rejection (never with anything but ids) and
// closes conn.
func Verify(conn net.Conn, wantUID int, log *zap.Logger) (uid, pid int, err error) {
	uid, pid, err = Get(conn)
	if err != nil {
		log.Warn("connection rejected", zap.Error(err))
		conn.Close()
		return 0, 0, fmt.Errorf("read peer credentials: %w", err)
	}
	if err := Check(uid, wantUID); err != nil {
		log.Warn("connection rejected", zap.Int("uid", uid), zap.Int("pid", pid), zap.Int("want_uid", wantUID))
		conn.Close()
		return uid, pid, fmt.Errorf("pid %d: %w", pid, err)
	}
	return uid, pid, nil
}

// listener is a net.Listener that accepts only connections of one uid.
type listener struct {
	net.Listener
	wantUID int
	log     *zap.Logger
}

// NewListener wraps ln, a Unix socket or loopback TCP listener, so that
// Accept returns only connections whose peer runs as wantUID; any other is
// closed at once and logged to log (which may be nil), and Accept waits for
// the next one. Reading a Unix peer's credentials does not block, and a TCP
// peer's owner is one kernel lookup bounded to a second, so a rejected peer
// cannot stall the accept loop for long. Close closes ln.
func NewListener(ln net.Listener, wantUID int, log *zap.Logger) net.Listener {
	if log == nil {
		log = zap.NewNop()
	}
	return &listener{Listener: ln, wantUID: wantUID, log: log}
}

// Accept implements net.Listener.
func (l *listener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if _, _, err := Verify(c, l.wantUID, l.log); err == nil {
			return c, nil
		}
	}
}
