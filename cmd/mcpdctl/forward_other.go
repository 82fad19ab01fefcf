//go:build !linux

package main

import "syscall"

// havePeerPID: no SO_PEERCRED here.
const havePeerPID = false

// rawPeerPID: no SO_PEERCRED here.
func rawPeerPID(syscall.RawConn) (int, error) { return 0, errNoPeer }
