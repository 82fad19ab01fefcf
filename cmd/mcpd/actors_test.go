package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/oklog/run"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// healthServer returns a gRPC server with the health service and a unix
// listener for it; a health Watch stream stays open until its client ends it.
func healthServer(t *testing.T) (*grpc.Server, net.Listener) {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpd-actors") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ln, err := net.Listen("unix", filepath.Join(dir, "api.sock"))
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	healthpb.RegisterHealthServer(gs, health.NewServer())
	return gs, ln
}

// watch opens a health Watch stream on the socket, as an app's open
// subscription, and waits for its first message so that the server holds
// it. end ends the stream from the client side.
func watch(t *testing.T, sock string) (stream healthpb.Health_WatchClient, end func()) {
	t.Helper()
	conn, err := apiclient.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err = healthpb.NewHealthClient(conn).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("first health message: %v", err)
	}
	return stream, cancel
}

// TestGRPCStopDoesNotDelayOtherActors checks that the gRPC actor's
// interrupt does not wait for its graceful stop: with an app's stream open,
// the supervisor (here an actor recording its interrupt) must begin
// stopping the children at once, not after the gRPC stop timeout, or mcpd
// overshoots its shutdown bound of 2 × shutdownGrace + 1 s.
func TestGRPCStopDoesNotDelayOtherActors(t *testing.T) {
	gs, ln := healthServer(t)
	var shutdowns atomic.Int32
	var g run.Group
	// A stop timeout far beyond the test's bounds: only the stream's end
	// can finish the graceful stop.
	addGRPCActor(&g, gs, ln, time.Hour, zaptest.NewLogger(t), func() { shutdowns.Add(1) })
	childrenStopping := make(chan struct{})
	supCtx, supCancel := context.WithCancel(context.Background())
	g.Add(func() error { <-supCtx.Done(); return nil }, func(error) { supCancel(); close(childrenStopping) })
	quit := make(chan struct{})
	g.Add(func() error { <-quit; return context.Canceled }, func(error) {})
	done := make(chan error, 1)
	go func() { done <- g.Run() }()

	stream, endStream := watch(t, ln.Addr().String())
	close(quit) // as a signal does
	select {
	case <-childrenStopping:
	case <-time.After(10 * time.Second):
		t.Fatal("the supervisor was not interrupted while an app's stream held the gRPC stop")
	}
	endStream()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Errorf("stream after the client ended it: %v, want Canceled", err)
	}
	select {
	case err := <-done:
		if err != context.Canceled {
			t.Errorf("run group: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run group did not return once the last stream ended")
	}
	if n := shutdowns.Load(); n != 1 {
		t.Errorf("beginShutdown called %d times, want 1", n)
	}
}

// TestGRPCStopCutsStreamsAfterTimeout checks that a stream still open when
// the stop timeout runs out is cut, so that it cannot hold mcpd up.
func TestGRPCStopCutsStreamsAfterTimeout(t *testing.T) {
	gs, ln := healthServer(t)
	var g run.Group
	addGRPCActor(&g, gs, ln, 50*time.Millisecond, zaptest.NewLogger(t), func() {})
	quit := make(chan struct{})
	g.Add(func() error { <-quit; return context.Canceled }, func(error) {})
	done := make(chan error, 1)
	go func() { done <- g.Run() }()

	stream, endStream := watch(t, ln.Addr().String())
	defer endStream()
	close(quit)
	if _, err := stream.Recv(); status.Code(err) != codes.Unavailable {
		t.Errorf("stream after the stop timeout: %v, want Unavailable", err)
	}
	if err := <-done; err != context.Canceled {
		t.Errorf("run group: %v, want context.Canceled", err)
	}
}
