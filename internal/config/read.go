package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// MaxFileSize is the largest config file ReadFile (and so Load) accepts:
// 4 MiB, far more than any real list of servers, small enough that a
// mistaken path cannot make mcpd read without end.
const MaxFileSize = 4 << 20

// ReadTimeout bounds the whole read of a config file. A local file is read
// in microseconds; the bound is for a file on a stalled network or FUSE
// mount, which must not hold a reload (or shutdown) for long.
const ReadTimeout = 5 * time.Second

// readChunk is how much ReadFile reads at a time; the deadline and the
// context are checked between chunks.
const readChunk = 64 << 10

// Errors of ReadFile beside those of the file system, which it wraps as
// they come (fs.ErrNotExist for a missing file). They are always wrapped
// with "read config PATH", hence no package prefix.
var (
	// ErrNotRegular: the path names something other than a regular file or
	// a symlink to one: a named pipe, a device, a directory or a socket.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file has more than MaxFileSize bytes.
	ErrTooLarge = errors.New("file too large")
	// ErrReadTimeout: the file was not read within ReadTimeout.
	ErrReadTimeout = errors.New("read timed out")
)

// ReadFile reads the config file at path, bounded in what it accepts and in
// how long it takes, so that no path can block or exhaust mcpd:
//
//   - the file is opened with O_NONBLOCK, so that a named pipe without a
//     writer cannot block the open;
//   - the opened file must be a regular file (a symlink to one is
//     followed), else the error wraps ErrNotRegular and names its kind;
//   - it may have at most MaxFileSize bytes, else the error wraps
//     ErrTooLarge (checked before reading, and again as it is read, in case
//     it grows);
//   - it returns with an error when ctx is done or, wrapping
//     ErrReadTimeout, after ReadTimeout, even while an open(2) or read(2)
//     is stalled inside the kernel (a hung network or FUSE mount): the
//     read then goes on in a goroutine of its own, abandoned, that ends
//     when the kernel returns.
//
// If the file does not exist the error wraps fs.ErrNotExist.
func ReadFile(ctx context.Context, path string) ([]byte, error) {
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, ReadTimeout)
	defer cancel()
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1) // buffered: an abandoned read never blocks
	go func() {                  // owned by done; abandoned only while stalled in the kernel
		data, err := readFileBounded(ctx, parent, path)
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		return r.data, r.err
	case <-ctx.Done():
		return nil, readCut(parent, path)
	}
}

// readCut is the error of a read cut short: by parent, or by ReadTimeout.
func readCut(parent context.Context, path string) error {
	if perr := parent.Err(); perr != nil {
		return fmt.Errorf("read config %s: %w", path, perr)
	}
	return fmt.Errorf("read config %s: %w after %v", path, ErrReadTimeout, ReadTimeout)
}

// readFileBounded is ReadFile's read, which checks ctx (parent's, with
// ReadTimeout) between chunks.
func readFileBounded(ctx, parent context.Context, path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("read config %s: %w: it is %s", path, ErrNotRegular, fileKind(fi.Mode()))
	}
	if fi.Size() > MaxFileSize {
		return nil, fmt.Errorf("read config %s: %w: %d bytes, more than the limit of 4 MiB", path, ErrTooLarge, fi.Size())
	}
	var buf bytes.Buffer
	buf.Grow(int(fi.Size()) + 1) // +1: EOF is seen without growing
	for {
		if ctx.Err() != nil {
			return nil, readCut(parent, path)
		}
		n, err := buf.ReadFrom(io.LimitReader(f, readChunk))
		if buf.Len() > MaxFileSize {
			return nil, fmt.Errorf("read config %s: %w: it grew past the limit of 4 MiB as it was read", path, ErrTooLarge)
		}
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		if n == 0 {
			return buf.Bytes(), nil
		}
	}
}

// fileKind names a non-regular file mode for an error message.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeDir != 0:
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	default:
		return "of mode " + m.String()
	}
}
