package rawio

import (
	"errors"
	"io"
	"os"
	"syscall"
)

// Local file systems, by statfs(2) f_type, whose appends to a file land in
// the page cache without waiting for a device or a server in practice.
var localFS = map[int64]bool{
	0xEF53:     true, // ext2, ext3, ext4
	0x58465342: true, // xfs
	0x9123683E: true, // btrfs
	0x01021994: true, // tmpfs
	0xF2F52010: true, // f2fs
	0x2FC12FC1: true, // zfs
	0xCA451A4E: true, // bcachefs
	0x794C7630: true, // overlayfs
}

// errNotLocal is NewFileWriter's refusal.
var errNotLocal = errors.New("rawio: not a regular file on a local disk")

// NewFileWriter returns a Writer of f, a regular file on a local disk
// (OnLocalDisk): small appends to it are copies into the page cache, which
// hold the goroutine's P for microseconds. It refuses any other file.
func NewFileWriter(f *os.File) (*Writer, error) {
	if !OnLocalDisk(f) {
		return nil, errNotLocal
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	return newWriter(rc), nil
}

// OnLocalDisk reports whether f is a regular file on a local file system.
// A file on a network or FUSE file system, whose writes may wait on a
// server, is not.
func OnLocalDisk(f *os.File) bool {
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
	return localFS[int64(fs.Type)]
}

// File is a non-blocking *os.File (a pipe or a socket in Go's poller, as
// os.Pipe and internal/pollio give) whose Read and Write are raw system
// calls (a Reader and a Writer); everything else (deadlines, Close, Name)
// is the file's own. Like an *os.File it is safe for concurrent use.
type File struct {
	*os.File
	rw
}

// NewFile wraps f, which must be non-blocking (ErrBlocking otherwise).
func NewFile(f *os.File) (*File, error) {
	rf := &File{File: f}
	if err := rf.init(f); err != nil {
		return nil, err
	}
	return rf, nil
}

// Read reads as os.File's Read does; errors but io.EOF are *os.PathError.
func (f *File) Read(p []byte) (int, error) {
	n, err := f.read(p)
	if err != nil && err != io.EOF {
		err = &os.PathError{Op: "read", Path: f.Name(), Err: err}
	}
	return n, err
}

// Write writes all of p as os.File's Write does; errors are *os.PathError.
func (f *File) Write(p []byte) (int, error) {
	n, err := f.write(p)
	if err != nil {
		err = &os.PathError{Op: "write", Path: f.Name(), Err: err}
	}
	return n, err
}
