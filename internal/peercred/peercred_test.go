package peercred

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestCheck(t *testing.T) {
	if err := Check(1000, 1000); err != nil {
		t.Errorf("same uid: %v", err)
	}
	if err := Check(0, 1000); !errors.Is(err, ErrRejected) {
		t.Errorf("root connecting to a user's daemon: %v, want ErrRejected", err)
	}
	if err := Check(1001, 1000); !errors.Is(err, ErrRejected) {
		t.Errorf("other user: %v, want ErrRejected", err)
	}
}

// TestListener runs the wrapped Accept on real connections: the own uid's
// connection is returned with its credentials; with another wanted uid the
// connection is closed by the server and Accept goes on waiting.
func TestListener(t *testing.T) {
	tests := []struct {
		name    string
		wantUID int
		ok      bool
	}{
		{"own uid accepted", os.Geteuid(), true},
		{"other uid rejected", os.Geteuid() + 1000, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inner, err := net.Listen("unix", filepath.Join(tempdir.Short(t), "p.sock"))
			if err != nil {
				t.Fatal(err)
			}
			ln := NewListener(inner, tt.wantUID, zaptest.NewLogger(t))
			accepted := make(chan net.Conn, 1)
			done := make(chan error, 1)
			go func() {
				c, err := ln.Accept()
				if err == nil {
					accepted <- c
				}
				done <- err
			}()
			c, err := net.Dial("unix", inner.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if tt.ok {
				s := <-accepted
				defer s.Close()
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				uid, pid, err := Get(s)
				if err != nil || uid != os.Geteuid() || pid != os.Getpid() {
					t.Errorf("Get = %d, %d, %v; want uid %d pid %d", uid, pid, err, os.Geteuid(), os.Getpid())
				}
				ln.Close()
				return
			}
			// The server closed the connection without a byte (a deadline,
			// so that a connection let through fails rather than hangs).
			_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if n, err := c.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("read after rejection = %d, %v; want EOF", n, err)
			}
			ln.Close() // Accept was still waiting: it returns now
			if err := <-done; !errors.Is(err, net.ErrClosed) {
				t.Errorf("Accept after Close = %v, want net.ErrClosed", err)
			}
		})
	}
}
