//go:build linux

package supervisor

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/remote"
)

// hangingAddr is a loopback address whose connects hang: a listening
// socket that never accepts, with a backlog of 0 and its queue filled,
// so that the kernel drops every further SYN.
func hangingAddr(t *testing.T) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(sa.(*syscall.SockaddrInet4).Port)
	for range 64 { // fill the queue: a connect that does not complete says it is full
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			return addr
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("%s: the listen queue never filled", addr)
	return ""
}

// A remote server (Streamable HTTP or SSE) whose connects hang until the
// start timeout (a host that does not answer) is unreachable, as a
// refused one is: every call
// fails with that cause and when mcpd tries next, status names it, and
// the server never reads crashloop however many starts time out.
func TestRemoteConnectHangIsNotACrashLoop(t *testing.T) {
	for _, typ := range []string{config.TypeHTTP, config.TypeSSE} {
		t.Run(typ, func(t *testing.T) { testConnectHang(t, typ) })
	}
}

func testConnectHang(t *testing.T, typ string) {
	addr := hangingAddr(t)
	opts := fastRestarts()
	opts.HandshakeTimeout = 300 * time.Millisecond
	opts.CrashLoopMax, opts.CrashLoopWindow = 3, time.Minute
	spec := remoteSpec("hang", "http://"+addr)
	spec.Remote.Type = typ
	opts.Specs = []Spec{spec}
	h := newHarness(t, opts, nil)
	crashloop := watchStates(t, h, "hang", StateCrashLoop)
	for i := range 6 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		_, err := h.s.Call(ctx, "hang", toolCall("echo", map[string]any{"message": "x"}), CallOptions{})
		cancel()
		if !errors.Is(err, ErrUnavailable) || !errors.As(err, new(*remote.ConnectTimeoutError)) {
			t.Fatalf("call %d: %v, want unavailable with the hung connect in its chain", i, err)
		}
		if msg := err.Error(); !strings.Contains(msg, `server "hang" is unreachable`) || !strings.Contains(msg, "timed out: no connection was made") ||
			!strings.Contains(msg, "next call") {
			t.Fatalf("call %d: %q, want the cause and when mcpd tries next", i, msg)
		}
	}
	if st := h.status("hang"); st.State == StateCrashLoop || !strings.Contains(st.LastError, "no connection was made") {
		t.Errorf("status: %s %q, want the hung connect named", st.State, st.LastError)
	}
	if crashloop.Load() || h.count("hang", EventCrashLoop) > 0 {
		t.Errorf("state read crashloop; events %v", h.kinds("hang"))
	}
}

// A server that accepts the connection and never answers is a broken
// server, not the network: its starts that time out are still bounded by
// the crash-loop bound.
func TestRemoteAcceptedButSilentIsBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards conns
		conns []net.Conn
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held, never answered
			mu.Unlock()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	opts := fastRestarts()
	opts.HandshakeTimeout = 300 * time.Millisecond
	opts.CrashLoopMax, opts.CrashLoopWindow = 3, time.Minute
	opts.Specs = []Spec{remoteSpec("silent", "http://"+ln.Addr().String())}
	h := newHarness(t, opts, nil)
	waitFor(t, "the server to be held down", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, _ = h.s.Call(ctx, "silent", toolCall("echo", map[string]any{"message": "x"}), CallOptions{})
		return h.status("silent").State == StateCrashLoop
	})
	if st := h.status("silent"); !strings.Contains(st.LastError, "timed out") || strings.Contains(st.LastError, "no connection was made") {
		t.Errorf("status %q, want the handshake's timeout as the reason", st.LastError)
	}
}
