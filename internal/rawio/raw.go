package rawio

import (
	"syscall"
	"unsafe"
)

// useRaw says whether sysRead and sysWrite make raw calls: not with the
// race detector (see the package doc). This package's tests set it.
var useRaw = !raceEnabled

func sysRead(fd uintptr, p []byte) (int, error) {
	if useRaw {
		return rawRead(fd, p)
	}
	return stdRead(fd, p)
}

func sysWrite(fd uintptr, p []byte) (int, error) {
	if useRaw {
		return rawWrite(fd, p)
	}
	return stdWrite(fd, p)
}

// rawRead and rawWrite are read(2) and write(2) without the scheduler's
// system-call hooks; fd must not block.
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

// stdRead and stdWrite are the standard library's calls.
func stdRead(fd uintptr, p []byte) (int, error) {
	n, err := syscall.Read(int(fd), p)
	return max(n, 0), err
}

func stdWrite(fd uintptr, p []byte) (int, error) {
	n, err := syscall.Write(int(fd), p)
	return max(n, 0), err
}
