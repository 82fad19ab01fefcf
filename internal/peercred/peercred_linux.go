//go:build linux

package peercred

import (
	"fmt"
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerUcred returns the uid and pid of the process at the other end of conn,
// as the kernel recorded them at connect(2) (SO_PEERCRED).
func peerUcred(conn net.Conn) (uid, pid int, err error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return 0, 0, fmt.Errorf("connection %T has no file descriptor", conn)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if credErr != nil {
		return 0, 0, fmt.Errorf("getsockopt SO_PEERCRED: %w", credErr)
	}
	return int(cred.Uid), int(cred.Pid), nil
}
