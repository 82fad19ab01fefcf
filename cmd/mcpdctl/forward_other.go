//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// havePeerPID: no SO_PEERCRED here.
const havePeerPID = false

// errNoPeer is a connection whose peer's pid cannot be read.
var errNoPeer = errors.New("no peer credentials")

// rawPeerPID: no SO_PEERCRED here.
func rawPeerPID(syscall.RawConn) (int, error) { return 0, errNoPeer }
