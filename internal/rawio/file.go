package rawio

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

// Local file systems, by statfs(2) f_type, on which a small append to a
// file is a copy into the page cache that does not wait for a device, a
// server or a throttle of the file system's own (as ZFS's write throttle
// and btrfs's space reservation may).
var localFS = map[uint32]bool{
	0xEF53:     true, // ext2, ext3, ext4
	0x58465342: true, // xfs
	0x01021994: true, // tmpfs
	0x794C7630: true, // overlayfs
}

// SlowFileWrite is how long a raw write of NewFileWriter's file may take
// before its Writer uses the standard calls for SlowFileBackoff: the
// kernel can still make a writer wait (dirty-page throttling while
// something else writes a lot to the same disk), and a raw call holds its
// P, and any stop of the world, meanwhile. The bound is well above a
// scheduler's time slice (a thread preempted in the call looks as slow),
// and the backoff ends rather than lasting for good, since even 10 ms can
// be a loaded machine's pause rather than the disk's.
const (
	SlowFileWrite   = 10 * time.Millisecond
	SlowFileBackoff = 10 * time.Second
)

// errNotLocal is NewFileWriter's refusal.
var errNotLocal = errors.New("rawio: not a regular file on a local disk")

// NewFileWriter returns a Writer of f, a regular file on a local disk
// (onLocalDisk), whose small appends are copies into the page cache that
// take microseconds. After a write that took SlowFileWrite or more it uses
// the standard calls for SlowFileBackoff. It refuses any other file.
func NewFileWriter(f *os.File) (*Writer, error) {
	if !onLocalDisk(f) {
		return nil, errNotLocal
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	w := newWriter(rc)
	w.slow = SlowFileWrite
	return w, nil
}

// onLocalDisk reports whether f is a regular file on one of the local file
// systems listed above.
func onLocalDisk(f *os.File) bool {
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return false
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var fs syscall.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.Fstatfs(int(fd), &fs) }); err != nil || serr != nil {
		return false
	}
	return localFS[uint32(fs.Type)]
}

// File is a pipe or socket of the poller (an *os.File such as os.Pipe and
// internal/pollio give) whose Read and Write are raw system calls (a
// Reader and a Writer). It offers what a stream needs and not the file's
// Fd, which would put the descriptor in blocking mode under the raw calls.
// Like an *os.File it is safe for concurrent use.
type File struct {
	f *os.File
	rw
}

// NewFile wraps f (ErrBlocking unless it is a non-blocking pipe or
// socket).
func NewFile(f *os.File) (*File, error) {
	rf := &File{f: f}
	if err := rf.init(f); err != nil {
		return nil, err
	}
	return rf, nil
}

// Read reads as os.File's Read does; errors but io.EOF are *os.PathError.
func (f *File) Read(p []byte) (int, error) {
	n, err := f.read(p)
	if err != nil && err != io.EOF {
		err = f.pathError("read", err)
	}
	return n, err
}

// Write writes all of p as os.File's Write does; errors are *os.PathError.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.write(p)
	if err != nil {
		err = f.pathError("write", err)
	}
	return n, err
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Name is the file's name.
func (f *File) Name() string { return f.f.Name() }

// SetReadDeadline is the file's.
func (f *File) SetReadDeadline(t time.Time) error { return f.f.SetReadDeadline(t) }

// SetWriteDeadline is the file's.
func (f *File) SetWriteDeadline(t time.Time) error { return f.f.SetWriteDeadline(t) }

// pathError says err as os.File does: a closed file is os.ErrClosed (the
// RawConn says "use of closed file", which os.File's own methods map).
func (f *File) pathError(op string, err error) error {
	if err.Error() == "use of closed file" {
		err = os.ErrClosed
	}
	return &os.PathError{Op: op, Path: f.f.Name(), Err: err}
}
