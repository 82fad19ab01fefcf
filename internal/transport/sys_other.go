//go:build !unix

package transport

import (
	"errors"
	"syscall"
)

// platformSupported fails: process groups and group signals are Unix only
// (Windows is a non-goal for now).
func platformSupported() error { return errors.ErrUnsupported }

func sysProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(int, syscall.Signal) error { return errors.ErrUnsupported }

func waitExited(int) error { return errors.ErrUnsupported }
