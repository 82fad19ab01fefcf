package pollio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// blockingPipe returns a pipe whose read end is in blocking mode, as a
// process's stdin is when its parent made it with os/exec.
func blockingPipe(t *testing.T) (r *os.File, rfd int, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	rfd = int(r.Fd()) // Fd puts the file in blocking mode
	return r, rfd, w
}

// readsThroughPoller checks that f is in the poller (only such a file has
// read deadlines) and reads what is written to w until w is closed; it
// closes both.
func readsThroughPoller(t *testing.T, f, w *os.File) {
	t.Helper()
	defer f.Close()
	if err := f.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatalf("read deadline: %v (not in the poller)", err)
	}
	const msg = "{\"jsonrpc\":\"2.0\"}\n"
	if _, err := w.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got, err := io.ReadAll(f); err != nil || string(got) != msg {
		t.Fatalf("read %q, %v", got, err)
	}
}

func TestPipeIsReadThroughThePoller(t *testing.T) {
	_, rfd, w := blockingPipe(t)
	f := openFD(rfd, os.O_RDONLY)
	if f == nil {
		t.Fatal("a pipe was not opened again")
	}
	readsThroughPoller(t, f, w)
	// The original description keeps its blocking mode.
	flags, err := unix.FcntlInt(uintptr(rfd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_NONBLOCK != 0 {
		t.Fatal("the original file description was made non-blocking")
	}
}

func TestPipeWithoutWriterSaysEOF(t *testing.T) {
	_, rfd, w := blockingPipe(t)
	w.Close()
	f := openFD(rfd, os.O_RDONLY) // must not wait for a writer
	if f == nil {
		t.Fatal("a pipe was not opened again")
	}
	defer f.Close()
	if n, err := f.Read(make([]byte, 8)); n != 0 || err != io.EOF {
		t.Fatalf("read = %d, %v; want EOF", n, err)
	}
}

func TestRegularFileIsLeftAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if g := openFD(int(f.Fd()), os.O_RDONLY); g != nil {
		g.Close()
		t.Fatal("a regular file was opened again")
	}
}

func TestSocketIsReadThroughThePoller(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	host := os.NewFile(uintptr(fds[1]), "host")
	defer host.Close()
	defer unix.Close(fds[0])
	f := openFD(fds[0], os.O_RDONLY)
	if f == nil {
		t.Fatal("a socket was not made pollable")
	}
	rc, err := f.SyscallConn() // not Fd, which may make the file blocking
	if err != nil {
		t.Fatal(err)
	}
	_ = rc.Control(func(fd uintptr) {
		if int(fd) == fds[0] {
			t.Error("the socket's own descriptor was taken: closing the file would close it")
		}
	})
	readsThroughPoller(t, f, host) // closes f
	// The original descriptor is still open, and shares the description.
	flags, err := unix.FcntlInt(uintptr(fds[0]), unix.F_GETFL, 0)
	if err != nil {
		t.Fatalf("the socket's descriptor was closed with the file: %v", err)
	}
	if flags&unix.O_NONBLOCK == 0 {
		t.Fatal("the socket's description was not made non-blocking")
	}
}

func TestClosedFDIsLeftAlone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	fd := int(r.Fd())
	r.Close()
	if f := openFD(fd, os.O_RDONLY); f != nil {
		f.Close()
		t.Fatal("a closed descriptor was opened")
	}
}

// A pipe's write end, as a daemon's stderr under a supervisor, is opened
// again for writing through the poller: a full pipe makes a write wait
// there, where a deadline ends it, and the original stays blocking.
func TestPipeIsWrittenThroughThePoller(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	wfd := int(w.Fd()) // Fd puts the file in blocking mode
	f := openFD(wfd, os.O_WRONLY)
	if f == nil {
		t.Fatal("a pipe's write end was not opened again")
	}
	defer f.Close()
	if err := f.SetWriteDeadline(time.Now().Add(100 * time.Millisecond)); err != nil {
		t.Fatalf("write deadline: %v (not in the poller)", err)
	}
	big := make([]byte, 1<<20) // more than a pipe holds
	if n, err := f.Write(big); !errors.Is(err, os.ErrDeadlineExceeded) || n >= len(big) {
		t.Fatalf("write to a full pipe = %d, %v; want the deadline", n, err)
	}
	flags, err := unix.FcntlInt(uintptr(wfd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	if flags&unix.O_NONBLOCK != 0 {
		t.Fatal("the original file description was made non-blocking")
	}
}
