package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// havePeerPID: SO_PEERCRED gives the peer's pid here.
const havePeerPID = true

// rawPeerPID reads SO_PEERCRED's pid.
func rawPeerPID(raw syscall.RawConn) (int, error) {
	var cred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, serr
	}
	return int(cred.Pid), nil
}
