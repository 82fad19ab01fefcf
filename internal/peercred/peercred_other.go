//go:build !linux

package peercred

import (
	"errors"
	"net"
)

// peerUcred is not implemented on this platform; every connection is
// rejected rather than accepted unchecked.
func peerUcred(net.Conn) (uid, pid int, err error) {
	return 0, 0, errors.New("peer credentials are not supported on this platform")
}
