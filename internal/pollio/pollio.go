// Package pollio gives a process its standard input, or its standard
// error, as a file whose reads or writes wait in Go's network poller
// instead of in a blocking read(2) or write(2).
//
// Why: in Go 1.26 and 1.27 a stop-the-world (every GC cycle starts with
// one) can miss a goroutine that is entering a system call at that moment.
// The stop then waits until that call returns, or until the runtime's
// monitor thread wakes from its deep sleep, up to 60 s later; the whole
// process stands still meanwhile. A server blocked in read(2) on stdin,
// waiting for the next request of a client that is itself waiting for the
// answer, hangs that long: seen as a 60 s timed-out call about once in
// 10^4–10^5 calls on a 2-core machine. Through the poller, read(2) never
// blocks, so the stop waits microseconds at most.
package pollio

import (
	"io"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// Stdin returns the process's standard input, read through the poller when
// it is a pipe, a FIFO or a socket; call it once per process.
//
//   - A pipe or a FIFO (what os/exec and Python give a child) is opened
//     again through /proc/self/fd/0, which gives this process a file
//     description of its own, so that making it non-blocking changes
//     nothing for others sharing the original one (a shell that reads the
//     same stdin after us).
//   - A socket (what Node's child_process gives a child: a socketpair) cannot
//     be opened again; its own description is made non-blocking in place
//     (through a duplicate descriptor, which the file returned owns). The
//     other end, the host's, is a description of its own.
//   - Anything else (a terminal, a regular file, no /proc) is os.Stdin as
//     it is.
func Stdin() *os.File {
	if f := openFD(0, os.O_RDONLY); f != nil {
		return f
	}
	return os.Stdin
}

// Stderr returns the process's standard error, written through the poller
// when it is a pipe or a FIFO, opened again as Stdin does. Anything else is
// os.Stderr as it is: a terminal, a file, and a socket (journald's stream),
// whose description is shared with fd 2 itself and often with stdout, which
// Go and the runtime's crash output write as blocking files. Only a file in
// the poller has write deadlines.
func Stderr() *os.File {
	var st unix.Stat_t
	if err := unix.Fstat(2, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
		if f := openFD(2, os.O_WRONLY); f != nil {
			return f
		}
	}
	return os.Stderr
}

// Stdout returns the process's standard output for an SDK transport that
// closes its writer at the end of its session: written through the poller
// when it is a pipe or a FIFO, as Stderr is, and never closed (Close does
// nothing; the process's stdout stays open).
func Stdout() io.WriteCloser {
	return keepOpen{StdoutFile()}
}

// StdoutFile returns the process's standard output, written through the
// poller when it is a pipe or a FIFO, opened again as Stderr does; anything
// else is os.Stdout as it is. Call it once per process.
func StdoutFile() *os.File {
	var st unix.Stat_t
	if err := unix.Fstat(1, &st); err == nil && st.Mode&unix.S_IFMT == unix.S_IFIFO {
		if f := openFD(1, os.O_WRONLY); f != nil {
			return f
		}
	}
	return os.Stdout
}

// keepOpen is a writer whose Close does nothing.
type keepOpen struct{ io.Writer }

func (keepOpen) Close() error { return nil }

// openFD opens fd again as a pollable file, for reading or for writing
// (mode), if it is a pipe, a FIFO or a socket; nil otherwise.
func openFD(fd, mode int) *os.File {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil
	}
	name := "/proc/self/fd/" + strconv.Itoa(fd)
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFIFO:
		// O_NONBLOCK: opening a FIFO for reading waits for a writer
		// otherwise, and the writer may be gone already (then the first
		// read says EOF); for writing, it fails at once when no reader is
		// left. os.OpenFile registers a non-blocking pipe with the poller.
		f, err := os.OpenFile(name, mode|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil
		}
		return f
	case unix.S_IFSOCK:
		// A duplicate, so that closing the file (or its finalizer) leaves
		// fd itself open; it shares the description, made non-blocking.
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
		if err != nil {
			return nil
		}
		if err := unix.SetNonblock(dup, true); err != nil {
			unix.Close(dup)
			return nil
		}
		return os.NewFile(uintptr(dup), name) // non-blocking: in the poller
	}
	return nil
}
