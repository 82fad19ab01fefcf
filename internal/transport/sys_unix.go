//go:build unix && !linux

package transport

import (
	"errors"
	"syscall"
)

func platformSupported() error { return nil }

// sysProcAttr puts the child in its own process group. There is no
// parent-death signal outside Linux.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to every process of the group pgid. A group that no
// longer exists is not an error.
func signalGroup(pgid int, sig syscall.Signal) error {
	err := syscall.Kill(-pgid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// waitExited is not implemented here; the waiter then reaps first and kills
// the group afterwards.
func waitExited(int) error { return errors.ErrUnsupported }
