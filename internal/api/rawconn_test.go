package api

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/mem"
)

// unixPair returns both ends of a Unix socket connection, accepted and
// dialled, closed at the test's end.
func unixPair(t *testing.T) (accepted, client net.Conn) {
	t.Helper()
	ln, err := net.Listen("unix", shortDir(t)+"/t.sock")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if client, err = net.Dial("unix", ln.Addr().String()); err != nil {
		t.Fatal(err)
	}
	if accepted, err = ln.Accept(); err != nil {
		client.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { accepted.Close(); client.Close() })
	return accepted, client
}

// countingPool is a mem.BufferPool that counts the buffers out.
type countingPool struct {
	gets, puts atomic.Int64
}

func (p *countingPool) Get(n int) *[]byte { p.gets.Add(1); b := make([]byte, n); return &b }
func (p *countingPool) Put(*[]byte)       { p.puts.Add(1) }

var _ mem.BufferPool = (*countingPool)(nil)

// ReadOnReady, gRPC's read of an app's socket, holds no pool buffer while
// the app sends nothing, returns what the app sent in one, and gives it
// back at the end of the stream with io.EOF.
func TestRawConnReadOnReady(t *testing.T) {
	accepted, client := unixPair(t)
	c, ok := newRawConn(accepted).(*rawConn)
	if !ok {
		t.Fatalf("newRawConn of a Unix socket is %T", newRawConn(accepted))
	}
	defer c.Close()

	pool := &countingPool{}
	type result struct {
		buf *[]byte
		n   int
		err error
	}
	read := func() <-chan result {
		ch := make(chan result, 1)
		go func() {
			b, n, err := c.ReadOnReady(1024, pool)
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
		t.Fatalf("ReadOnReady = %q, %v", (*r.buf)[:r.n], r.err)
	}
	pool.Put(r.buf)

	client.Close()
	r = <-read()
	if !errors.Is(r.err, io.EOF) || r.buf != nil {
		t.Fatalf("ReadOnReady at the end = %v, %v; want nil, io.EOF", r.buf, r.err)
	}
	if out := pool.gets.Load() - pool.puts.Load(); out != 0 {
		t.Fatalf("%d buffers not given back", out)
	}
	c.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _, err := c.ReadOnReady(1024, pool)
		var op *net.OpError
		if !errors.As(err, &op) || !errors.Is(err, net.ErrClosed) {
			t.Errorf("ReadOnReady of a closed socket: %v, want a *net.OpError wrapping net.ErrClosed", err)
		}
	})
	wg.Wait()
}
