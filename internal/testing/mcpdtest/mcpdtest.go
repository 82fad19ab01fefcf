// Package mcpdtest runs an mcpd for tests, on a real Unix socket in a
// fresh temporary directory: a real one in-process (Start), supervisor and
// gRPC API, serving fake MCP servers (fakemcp), or any implementation of
// mcpd's gRPC API (Serve), such as a canned or scripted one. Each is
// stopped when the test ends.
package mcpdtest

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/secrets"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Serve serves impl as mcpd on a socket in a fresh temporary directory
// and returns the socket path; the server is stopped when the test ends.
func Serve(t testing.TB, impl mcpdv1.McpdServer, opts ...grpc.ServerOption) string {
	t.Helper()
	sock, _ := ServeStoppable(t, impl, opts...)
	return sock
}

// ServeStoppable is Serve, and stop, which stops the server at once
// (grpc.Server.Stop: every connection closes, the socket file goes), as
// mcpd going away does; the test's end stops it if stop was not called.
func ServeStoppable(t testing.TB, impl mcpdv1.McpdServer, opts ...grpc.ServerOption) (sock string, stop func()) {
	t.Helper()
	sock = filepath.Join(t.TempDir(), "mcpd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	mcpdv1.RegisterMcpdServer(srv, impl)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }() // owned: stop waits for it
	stop = sync.OnceFunc(func() {
		srv.Stop()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})
	t.Cleanup(stop)
	return sock, stop
}

// Start runs a real mcpd in-process (supervisor and gRPC API) on a socket
// in a fresh temporary directory, serving fake servers "name" with the
// fakemcp mode "mode", given in pairs, and returns the socket path; it is
// stopped, children and all, when the test ends. The test binary must
// call fakemcp.Main first thing (in an init), as it is the fake servers'.
func Start(t testing.TB, nameModes ...string) string {
	t.Helper()
	var specs []supervisor.Spec
	for i := 0; i+1 < len(nameModes); i += 2 {
		specs = append(specs, FakeSpec(nameModes[i], nameModes[i+1]))
	}
	return StartSpecs(t, specs)
}

// FakeSpec is the spec of a fake server "name" in the fakemcp mode "mode".
func FakeSpec(name, mode string) supervisor.Spec {
	cmd, args := fakemcp.Command()
	return supervisor.Spec{Name: name, Command: cmd, Args: args,
		Env: map[string]string{fakemcp.EnvMode: mode + ",quiet"}}
}

// StartSpecs is Start serving the servers of specs.
func StartSpecs(t testing.TB, specs []supervisor.Spec) string {
	t.Helper()
	log := zaptest.NewLogger(t)
	sec := secrets.Open(secrets.Options{}) // the test's HOME: mcpdctl secret's store
	t.Cleanup(sec.Close)
	sup := supervisor.New(supervisor.Options{Specs: specs, Logger: log, Secrets: sec,
		BackoffMin: 10 * time.Millisecond, BackoffMax: 50 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- sup.Run(ctx) }() // owned: the cleanup waits for it
	t.Cleanup(func() {
		cancel()
		if err := <-ran; err != nil {
			t.Errorf("supervisor: %v", err)
		}
	})
	sock := filepath.Join(t.TempDir(), "run", "mcpd.sock")
	ln, err := socket.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	// grpc-go's log is routed once per process, to the first logger
	// NewGRPCServer gets: give it one that outlives every test.
	gs := api.NewGRPCServer(core.New(sup, core.Options{Logger: log, SocketPath: sock}), zap.NewNop())
	served := make(chan error, 1)
	go func() { served <- gs.Serve(ln) }() // owned: the cleanup waits for it
	t.Cleanup(func() {
		gs.Stop()
		if err := <-served; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})
	return sock
}
