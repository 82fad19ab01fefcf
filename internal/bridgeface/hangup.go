package bridgeface

import (
	"context"
	"io"
	"net"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A relay that ends its input (the host closed stdin) half-closes the
// connection and still reads the answers to what is in flight. A relay
// that is gone (mcpdctl killed or signalled) has closed it whole: nobody
// reads those answers, and its requests are cancelled at the servers
// instead of running to their end or their timeout. The kernel says which
// with POLLHUP, which Go's poller does not report; after the input's end
// the connection is polled for it.

// hangupPoll is how often a connection whose input ended is checked for
// its peer's close.
const hangupPoll = 100 * time.Millisecond

// eofReader reads r and calls onEOF once, at its end.
type eofReader struct {
	r     io.Reader
	once  sync.Once
	onEOF func()
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err == io.EOF {
		e.once.Do(e.onEOF)
	}
	return n, err
}

// watchHangup calls gone once conn's peer has closed it whole, and returns
// then or when ctx ends.
func watchHangup(ctx context.Context, conn net.Conn, gone func()) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	t := time.NewTicker(hangupPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		hup := false
		cerr := raw.Control(func(fd uintptr) {
			fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLHUP}}
			if n, err := unix.Poll(fds, 0); err == nil && n > 0 {
				hup = fds[0].Revents&(unix.POLLHUP|unix.POLLERR) != 0
			}
		})
		if cerr != nil || hup {
			gone()
			return
		}
	}
}
