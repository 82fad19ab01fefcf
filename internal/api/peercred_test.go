package api

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestPeerCredentials runs the real handshake on real connections.
func TestPeerCredentials(t *testing.T) {
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
			path := filepath.Join(tempdir.Short(t), "p.sock")
			l, err := net.Listen("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			type result struct {
				info AuthInfo
				err  error
			}
			res := make(chan result, 1)
			go func() {
				c, err := l.Accept()
				if err != nil {
					res <- result{err: err}
					return
				}
				creds := &peerCreds{wantUID: tt.wantUID, log: zaptest.NewLogger(t)}
				conn, info, err := creds.ServerHandshake(c)
				if err == nil {
					conn.Close()
					res <- result{info: info.(AuthInfo)}
					return
				}
				res <- result{err: err}
			}()
			c, err := net.Dial("unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			r := <-res
			if !tt.ok {
				if !errors.Is(r.err, ErrPeerRejected) {
					t.Fatalf("handshake error = %v, want ErrPeerRejected", r.err)
				}
				// The connection was closed by the server.
				if n, err := c.Read(make([]byte, 1)); err != io.EOF {
					t.Errorf("read after rejection = %d, %v; want EOF", n, err)
				}
				return
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.info.UID != os.Geteuid() || r.info.PID != os.Getpid() || r.info.AuthType() != AuthType {
				t.Errorf("AuthInfo = %+v, want uid %d pid %d", r.info, os.Geteuid(), os.Getpid())
			}
		})
	}
}

// TestRejectedPeerCannotCall checks the whole server: a connection whose uid
// is not the daemon's gets no RPC through.
func TestRejectedPeerCannotCall(t *testing.T) {
	path := filepath.Join(tempdir.Short(t), "s", "mcpd.sock")
	l, err := socket.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	log := zaptest.NewLogger(t)
	srv := core.New(&fakeBackend{}, core.Options{Logger: log})
	gs := NewGRPCServer(srv, log, grpc.Creds(&peerCreds{wantUID: os.Geteuid() + 1000, log: log}))
	served := make(chan error, 1)
	go func() { served <- gs.Serve(l) }()
	defer func() {
		gs.Stop()
		<-served
	}()
	client := mcpdv1.NewMcpdClient(dial(t, path))
	ctx, cancel := context.WithTimeout(ctxT(t), 5*time.Second)
	defer cancel()
	_, err = client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("GetStatus from a rejected uid = %v, want Unavailable", err)
	}
}
