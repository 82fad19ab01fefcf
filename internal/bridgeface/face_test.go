package bridgeface

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// flakyListener fails its first Accepts with EMFILE, then blocks until
// closed.
type flakyListener struct {
	fails   int
	accepts atomic.Int32
	once    sync.Once
	closed  chan struct{}
}

func (l *flakyListener) Accept() (net.Conn, error) {
	if n := l.accepts.Add(1); int(n) <= l.fails {
		return nil, &net.OpError{Op: "accept", Net: "unix", Err: syscall.EMFILE}
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *flakyListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *flakyListener) Addr() net.Addr { return &net.UnixAddr{Name: "flaky", Net: "unix"} }

// An accept error other than a closed listener (out of descriptors) is
// waited out: the socket keeps accepting afterwards.
func TestAcceptErrorsAreRetried(t *testing.T) {
	ln := &flakyListener{fails: 3, closed: make(chan struct{})}
	f := Serve(ln, Options{WantUID: -1})
	deadline := time.Now().Add(10 * time.Second)
	for ln.accepts.Load() <= int32(ln.fails) {
		if time.Now().After(deadline) {
			t.Fatalf("%d accepts after %d failures, want the loop to go on", ln.accepts.Load(), ln.fails)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
	if err := f.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
}
