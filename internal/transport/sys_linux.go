//go:build linux

package transport

import (
	"errors"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

func platformSupported() error { return nil }

// sysProcAttr puts the child in its own session and process group (so the
// whole group can be signalled, and no shell job of the user's session can
// ever share its ids: see internal/procs) and has the kernel SIGKILL it if mcpd dies. Pdeathsig
// fires when the OS thread that forked the child exits; Go only ends a thread
// when a goroutine exits while locked to it (runtime.LockOSThread), so Start
// must not be called from such a goroutine.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setsid: true, Pdeathsig: syscall.SIGKILL}
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

// waitExited blocks until the child pid has exited, without reaping it
// (waitid with WNOWAIT), so that its pid and process group id stay reserved
// while the rest of the group is killed. The wait for the exit itself is
// done in Go's poller on a pidfd where the kernel has them: a waitid
// blocking for the child's whole life is a system call that a GC's
// stop-the-world can miss when it starts at the same moment, and the whole
// daemon would then stand still until the child exits or for up to a
// minute (see internal/pollio).
func waitExited(pid int) error {
	pollExit(pid)      // then waitid returns at once
	const pPID = 1     // P_PID
	var info [128]byte // siginfo_t
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&info[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		switch errno {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		default:
			return errno
		}
	}
}

// pollExit waits in the poller until the process pid has exited, on a
// pidfd (readable once the process ended; Linux 5.3). Without pidfds it
// returns at once, and the caller's waitid blocks instead.
func pollExit(pid int) {
	f := openPidfd(pid)
	if f == nil {
		return
	}
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	// A poll error counts as ready: the caller's waitid then waits itself.
	_ = rc.Read(func(fd uintptr) bool { return pollNow(fd, unix.POLLIN) })
}

// openPidfd returns a non-blocking pidfd of pid, registered with the
// poller, or nil when the kernel has none for it.
func openPidfd(pid int) *os.File {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.EINVAL) { // PIDFD_NONBLOCK is Linux 5.10
		if fd, err = unix.PidfdOpen(pid, 0); err == nil {
			if err = unix.SetNonblock(fd, true); err != nil {
				_ = unix.Close(fd)
			}
		}
	}
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "pidfd") // non-blocking: in the poller
}
