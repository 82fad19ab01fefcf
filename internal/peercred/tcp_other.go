//go:build !linux

package peercred

import (
	"errors"
	"net"
)

// tcpPeerUID is not available off Linux: every TCP connection is refused.
func tcpPeerUID(net.Conn) (int, error) {
	return -1, errors.New("finding a TCP peer's uid needs Linux")
}
