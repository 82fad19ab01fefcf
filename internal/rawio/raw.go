package rawio

import (
	"syscall"
	"unsafe"
)

// read and write are the calls the Readers and Writers make: raw ones,
// but the standard library's with the race detector (see the package doc).
func read(fd uintptr, p []byte) (int, error) {
	if raceEnabled {
		return hookedRead(fd, p)
	}
	return rawRead(fd, p)
}

func write(fd uintptr, p []byte) (int, error) {
	if raceEnabled {
		return hookedWrite(fd, p)
	}
	return rawWrite(fd, p)
}

// rawRead and rawWrite are read(2) and write(2) without the scheduler's
// system-call hooks; fd must be non-blocking.
func rawRead(fd uintptr, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

func rawWrite(fd uintptr, p []byte) (int, error) {
	n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// hookedRead and hookedWrite are the standard library's calls.
func hookedRead(fd uintptr, p []byte) (int, error) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), err
}

func hookedWrite(fd uintptr, p []byte) (int, error) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), err
}
