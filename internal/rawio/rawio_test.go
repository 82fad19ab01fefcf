package rawio

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// The tests make the raw calls even with the race detector: the data they
// move through descriptors is compared only by the goroutine that wrote or
// read it, so the detector needs no edge through the descriptor.
func TestMain(m *testing.M) {
	useRaw = true
	goleak.VerifyTestMain(m)
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// What a Writer writes through a pipe far smaller than the message, to a
// reader that takes it slowly, arrives whole and in order at a Reader,
// which then sees io.EOF.
func TestWriterAndReaderThroughAFullPipe(t *testing.T) {
	r, w := pipe(t)
	msg := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB; a pipe holds 64 KiB
	wr, err := NewWriter(w)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var n int
	var werr error
	wg.Go(func() {
		n, werr = wr.Write(msg)
		w.Close()
	})
	var got bytes.Buffer
	buf := make([]byte, 3000) // odd reads, so that the writer waits for room
	for {
		k, err := rd.Read(buf)
		got.Write(buf[:k])
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
	wg.Wait()
	if werr != nil || n != len(msg) {
		t.Fatalf("write: %d, %v; want %d, nil", n, werr, len(msg))
	}
	if !bytes.Equal(got.Bytes(), msg) {
		t.Fatalf("read %d bytes, not what was written (%d bytes)", got.Len(), len(msg))
	}
}

// A Reader waiting for data honours the descriptor's read deadline, and a
// read of nothing returns at once.
func TestReaderDeadline(t *testing.T) {
	r, _ := pipe(t)
	rd, err := NewReader(r)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := rd.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
	if err := r.SetReadDeadline(time.Now().Add(20 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Read(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want os.ErrDeadlineExceeded", err)
	}
}

// A write to a pipe nobody reads any more fails with EPIPE; the process
// does not die of SIGPIPE.
func TestWriterBrokenPipe(t *testing.T) {
	r, w := pipe(t)
	r.Close()
	wr, err := NewWriter(w)
	if err != nil {
		t.Fatal(err)
	}
	n, err := wr.Write([]byte("hello\n"))
	if n != 0 || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("write to a broken pipe: %d, %v; want 0, EPIPE", n, err)
	}
}

// A Writer of a closed descriptor says so.
func TestWriterClosed(t *testing.T) {
	_, w := pipe(t)
	wr, err := NewWriter(w)
	if err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := wr.Write([]byte("x")); err == nil {
		t.Fatal("write to a closed pipe succeeded")
	}
}

func unixPair(t *testing.T) (server, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "s.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ln = NewListener(ln)
	var wg sync.WaitGroup
	var aerr error
	wg.Go(func() { server, aerr = ln.Accept() })
	client, err = net.Dial("unix", ln.Addr().String())
	wg.Wait()
	if err != nil || aerr != nil {
		t.Fatal(err, aerr)
	}
	t.Cleanup(func() { server.Close(); client.Close() })
	return server, client
}

// An accepted socket is a Conn: it echoes what it reads, keeps the
// socket's own methods, and its errors are *net.OpError as net's are.
func TestConnEcho(t *testing.T) {
	server, client := unixPair(t)
	if _, ok := server.(*Conn); !ok {
		t.Fatalf("accepted %T, want *Conn", server)
	}
	if _, ok := server.(syscall.Conn); !ok {
		t.Fatal("Conn is not a syscall.Conn")
	}
	if _, err := client.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, err := server.Read(buf)
	if err != nil || string(buf[:n]) != "ping\n" {
		t.Fatalf("server read %q, %v", buf[:n], err)
	}
	if _, err := server.Write([]byte("pong\n")); err != nil {
		t.Fatal(err)
	}
	if n, err = io.ReadFull(client, buf[:5]); err != nil || string(buf[:n]) != "pong\n" {
		t.Fatalf("client read %q, %v", buf[:n], err)
	}
	if err := server.(*Conn).CloseWrite(); err != nil {
		t.Fatalf("CloseWrite: %v", err)
	}
	if _, err := client.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("client read after CloseWrite: %v, want EOF", err)
	}
	client.Close()
	if _, err := server.Read(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("server read after the client closed: %v, want EOF", err)
	}
	var err2 error
	for range 100 { // the first writes may still be taken by the kernel
		if _, err2 = server.Write([]byte("x")); err2 != nil {
			break
		}
	}
	var op *net.OpError
	if !errors.As(err2, &op) || op.Op != "write" || !errors.Is(err2, syscall.EPIPE) {
		t.Fatalf("write to a closed peer: %v, want a *net.OpError wrapping EPIPE", err2)
	}
	server.Close()
	_, err = server.Read(buf)
	var rop *net.OpError
	if !errors.As(err, &rop) || rop.Op != "read" || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read of a closed Conn: %v, want a read *net.OpError wrapping net.ErrClosed", err)
	}
}

// Writes from many goroutines at once each arrive whole, as net.Conn
// promises.
func TestConnConcurrentWrites(t *testing.T) {
	server, client := unixPair(t)
	const writers, size = 8, 256 << 10
	var wg sync.WaitGroup
	for i := range writers {
		msg := bytes.Repeat([]byte{'a' + byte(i)}, size)
		wg.Go(func() {
			if _, err := server.Write(msg); err != nil {
				t.Error(err)
			}
		})
	}
	got, err := io.ReadAll(io.LimitReader(client, writers*size))
	wg.Wait()
	if err != nil || len(got) != writers*size {
		t.Fatalf("read %d bytes, %v", len(got), err)
	}
	for off := 0; off < len(got); off += size {
		if bytes.Count(got[off:off+size], got[off:off+1]) != size {
			t.Fatalf("write at %d was interleaved with another", off)
		}
	}
}

// Only sockets are wrapped.
func TestNewConnLeavesOthers(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if c := NewConn(a); c != a {
		t.Fatalf("NewConn(net.Pipe) = %T, want it as it was", c)
	}
}

// A regular file is on a local disk when its file system is one of those
// listed; a pipe and a directory never are.
func TestOnLocalDisk(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var fs syscall.Statfs_t
	if err := syscall.Statfs(dir, &fs); err != nil {
		t.Fatal(err)
	}
	if got, want := onLocalDisk(f), localFS[uint32(fs.Type)]; got != want {
		t.Errorf("onLocalDisk(file on fs type %#x) = %v, want %v", fs.Type, got, want)
	}
	if shm, err := os.CreateTemp("/dev/shm", "rawio"); err == nil { // tmpfs where it exists
		defer os.Remove(shm.Name())
		defer shm.Close()
		if !onLocalDisk(shm) {
			t.Errorf("a file in /dev/shm (tmpfs) is not on a local disk")
		}
	}
	r, _ := pipe(t)
	if onLocalDisk(r) {
		t.Error("a pipe is on a local disk")
	}
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if onLocalDisk(d) {
		t.Error("a directory is a file on a local disk")
	}
}

// A descriptor in blocking mode is refused: a raw read of it would hold
// the P until data came.
func TestBlockingRefused(t *testing.T) {
	r, w := pipe(t)
	rc, err := r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Control(func(fd uintptr) { _ = syscall.SetNonblock(int(fd), false) }); err != nil {
		t.Fatal(err)
	}
	if _, err := NewReader(r); !errors.Is(err, ErrBlocking) {
		t.Fatalf("NewReader of a blocking pipe: %v, want ErrBlocking", err)
	}
	if _, err := NewWriter(w); err != nil {
		t.Fatalf("NewWriter of a non-blocking pipe: %v", err)
	}
	f, err := os.OpenFile(filepath.Join(t.TempDir(), "f"), os.O_RDWR|os.O_CREATE|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := NewReader(f); !errors.Is(err, ErrBlocking) {
		t.Fatalf("NewReader of a regular file: %v, want ErrBlocking", err)
	}
}

// A file writer appends to a regular file on a local disk, in bulk too,
// and refuses a pipe.
func TestFileWriter(t *testing.T) {
	_, w := pipe(t)
	if _, err := NewFileWriter(w); err == nil {
		t.Fatal("NewFileWriter took a pipe")
	}
	path := filepath.Join(t.TempDir(), "log")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fw, err := NewFileWriter(f)
	if !onLocalDisk(f) {
		if err == nil {
			t.Fatal("NewFileWriter took a file that is not on a local disk")
		}
		t.Skip("the temporary directory is not on a local disk")
	}
	if err != nil {
		t.Fatal(err)
	}
	big := bytes.Repeat([]byte("b"), 2*BulkSize)
	for _, p := range [][]byte{[]byte("one\n"), big, []byte("two\n")} {
		if n, err := fw.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	// A write that took longer than fw.slow sends it to the standard calls
	// for SlowFileBackoff; they write the same.
	fw.slow = time.Nanosecond
	for _, p := range [][]byte{[]byte("three\n"), []byte("four\n")} {
		if n, err := fw.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if until := time.Until(fw.stdUntil); until <= 0 || until > SlowFileBackoff {
			t.Fatalf("after a slow write the standard calls are used for %v, want up to %v", until, SlowFileBackoff)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "one\n" + string(big) + "two\nthree\nfour\n"; string(got) != want {
		t.Fatalf("file has %d bytes, want %d", len(got), len(want))
	}
}

// A File of a pipe reads and writes it, keeps the file's deadlines, and
// says its errors as os.File does.
func TestFile(t *testing.T) {
	r, w := pipe(t)
	rf, err := NewFile(r)
	if err != nil {
		t.Fatal(err)
	}
	wf, err := NewFile(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.Write([]byte("line\n")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	if n, err := rf.Read(buf); err != nil || string(buf[:n]) != "line\n" {
		t.Fatalf("Read = %q, %v", buf[:n], err)
	}
	if err := rf.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	_, err = rf.Read(buf)
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "read" || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a *os.PathError wrapping os.ErrDeadlineExceeded", err)
	}
	w.Close()
	if err := rf.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rf.Read(buf); !errors.Is(err, io.EOF) || errors.As(err, &pe) {
		t.Fatalf("read at the end: %v, want io.EOF itself", err)
	}
	rf.Close()
	if _, err := rf.Read(buf); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("read of a closed File: %v, want os.ErrClosed", err)
	}
	if _, err := NewFile(os.Stdin); err == nil && !isPipeOrSocket(t, os.Stdin) {
		t.Fatal("NewFile took a stdin that is no pipe or socket")
	}
}

func isPipeOrSocket(t *testing.T, f *os.File) bool {
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode()&(os.ModeNamedPipe|os.ModeSocket) != 0
}

// The raw calls themselves (the race detector's builds use the standard
// library's in Readers and Writers): data through a pipe, EAGAIN when it
// is empty and when it is full, EBADF for a closed descriptor.
func TestRawCalls(t *testing.T) {
	r, w := pipe(t)
	var rfd, wfd uintptr
	rc, _ := r.SyscallConn()
	wc, _ := w.SyscallConn()
	_ = rc.Control(func(fd uintptr) { rfd = fd })
	_ = wc.Control(func(fd uintptr) { wfd = fd })
	buf := make([]byte, 64<<10)
	if _, err := rawRead(rfd, buf); err != syscall.EAGAIN {
		t.Fatalf("read of an empty pipe: %v, want EAGAIN", err)
	}
	if n, err := rawWrite(wfd, []byte("abc")); n != 3 || err != nil {
		t.Fatalf("write = %d, %v", n, err)
	}
	if n, err := rawRead(rfd, buf); n != 3 || err != nil || string(buf[:3]) != "abc" {
		t.Fatalf("read = %q, %v", buf[:n], err)
	}
	var err error
	for range 1000 { // fill the pipe
		if _, err = rawWrite(wfd, buf); err != nil {
			break
		}
	}
	if err != syscall.EAGAIN {
		t.Fatalf("write to a full pipe: %v, want EAGAIN", err)
	}
	if _, err := rawRead(^uintptr(0), buf); err != syscall.EBADF {
		t.Fatalf("read of a bad descriptor: %v, want EBADF", err)
	}
	if _, err := rawWrite(^uintptr(0), buf); err != syscall.EBADF {
		t.Fatalf("write to a bad descriptor: %v, want EBADF", err)
	}
}

// Many small writes (the raw path) into a pipe that fills up wait in the
// poller and go on where they stopped: everything arrives, in order.
func TestWriterSmallWritesThroughAFullPipe(t *testing.T) {
	r, w := pipe(t)
	wr, err := NewWriter(w)
	if err != nil {
		t.Fatal(err)
	}
	const msgs = 2000 // 2000 × 1000 bytes: 30 times what the pipe holds
	var wg sync.WaitGroup
	wg.Go(func() {
		defer w.Close()
		for i := range msgs {
			msg := bytes.Repeat([]byte{byte('a' + i%26)}, 1000)
			if n, err := wr.Write(msg); n != len(msg) || err != nil {
				t.Errorf("write %d: %d, %v", i, n, err)
				return
			}
		}
	})
	got, err := io.ReadAll(r)
	wg.Wait()
	if err != nil || len(got) != msgs*1000 {
		t.Fatalf("read %d bytes, %v; want %d", len(got), err, msgs*1000)
	}
	for i := range msgs {
		if c := got[i*1000]; c != byte('a'+i%26) || bytes.Count(got[i*1000:(i+1)*1000], []byte{c}) != 1000 {
			t.Fatalf("message %d is not whole or not in its place", i)
		}
	}
}

// countingPool is a BufferPool that counts the buffers out.
type countingPool struct {
	gets, puts atomic.Int64
}

func (p *countingPool) Get(n int) *[]byte { p.gets.Add(1); b := make([]byte, n); return &b }
func (p *countingPool) Put(*[]byte)       { p.puts.Add(1) }

// ReadReady, gRPC's read of an app's socket, holds no pool buffer while
// the app sends nothing, returns what the app sent in one, and gives it
// back at the end of the stream with io.EOF.
func TestConnReadReady(t *testing.T) {
	accepted, client := unixPair(t)
	c := accepted.(*Conn)

	pool := &countingPool{}
	type result struct {
		buf *[]byte
		n   int
		err error
	}
	read := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			b, n, err := c.ReadReady(1024, pool)
			ch <- result{b, n, err}
		}()
		return ch
	}
	ch := read()
	// Wait until the read found nothing and is waiting in the poller.
	for pool.puts.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	if out := pool.gets.Load() - pool.puts.Load(); out != 0 {
		t.Fatalf("%d buffers out while the app sends nothing", out)
	}
	if _, err := client.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil || string((*r.buf)[:r.n]) != "hello" {
		t.Fatalf("ReadReady = %q, %v", (*r.buf)[:r.n], r.err)
	}
	pool.Put(r.buf)

	client.Close()
	r = <-read()
	if !errors.Is(r.err, io.EOF) || r.buf != nil {
		t.Fatalf("ReadReady at the end = %v, %v; want nil, io.EOF", r.buf, r.err)
	}
	if out := pool.gets.Load() - pool.puts.Load(); out != 0 {
		t.Fatalf("%d buffers not given back", out)
	}
	c.Close()
	_, _, err := c.ReadReady(1024, pool)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "read" || !errors.Is(err, net.ErrClosed) {
		t.Errorf("ReadReady of a closed socket: %v, want a read *net.OpError wrapping net.ErrClosed", err)
	}
}
