package main

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// BenchmarkHotPathBare is the in-process baseline of the HotPath
// benchmarks: a bare gRPC server (no mcpd code) on a Unix socket in this
// process, answering the same kind of round trip as CallTool (a
// server-streaming RPC with one message back) and as a unary RPC, with a
// payload the size of the echo result. mcpd's own cost in one process is
// about HotPathCallTool − HotPathDirect − HotPathBare/stream.
func BenchmarkHotPathBare(b *testing.B) {
	bs := &bare{conn: dialInProcess(b, serveInProcess(b, &bareServiceDesc))}
	// About the size of the echo result mcpd returns.
	payload := wrapperspb.String(`{"content":[{"type":"text","text":"hello from mcpd-bench"}]}`)
	for _, v := range []struct {
		name string
		call func() error
	}{
		{"stream", func() error { return bs.stream(b.Context(), payload) }},
		{"unary", func() error { return bs.echo(b.Context(), payload) }},
	} {
		b.Run(v.name, func(b *testing.B) {
			if err := v.call(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := v.call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHotPathSupervisor is the call through mcpd without gRPC: the
// api's request straight to supervisor.CallCached, as the CallTool handler
// makes it. Between it and HotPathDirect is the supervisor and session
// work; between it and HotPathCallTool the gRPC hop.
func BenchmarkHotPathSupervisor(b *testing.B) {
	for _, mode := range []string{"modern,quiet", "legacy,quiet"} {
		b.Run(strings.Split(mode, ",")[0], func(b *testing.B) {
			cmd, args := fakemcp.Command()
			sup := supervisor.New(supervisor.Options{
				Specs:  []supervisor.Spec{{Name: "fake", Command: cmd, Args: args, Env: fakeEnv(mode)}},
				Logger: zap.NewNop(),
			})
			ctx, cancel := context.WithCancel(context.Background())
			supDone := make(chan error, 1)
			go func() { supDone <- sup.Run(ctx) }()
			b.Cleanup(func() {
				cancel()
				if err := <-supDone; err != nil {
					b.Errorf("supervisor: %v", err)
				}
			})
			call := func() error {
				req := &session.Request{Method: "tools/call", Params: echoParams}
				resp, _, err := sup.CallCached(ctx, "fake", req, supervisor.CallOptions{})
				if err != nil {
					return err
				}
				if resp.Error != nil {
					return resp.Error
				}
				return checkEcho("fake", string(resp.Result))
			}
			if err := call(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := call(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkHotPathParallel is the throughput shape in one process: 16 apps
// (each its own gRPC connection) calling echo on one shared child at once.
// Its CPU profile shows what one call costs when mcpd, not latency, is the
// limit.
func BenchmarkHotPathParallel(b *testing.B) {
	const apps = 16
	cmd, args := fakemcp.Command()
	sup := supervisor.New(supervisor.Options{
		Specs:  []supervisor.Spec{{Name: "fake", Command: cmd, Args: args, Env: fakeEnv("modern,quiet")}},
		Logger: zap.NewNop(),
	})
	path := filepath.Join(b.TempDir(), "s", "mcpd.sock")
	ln, err := socket.Listen(path)
	if err != nil {
		b.Fatal(err)
	}
	gs := api.NewGRPCServer(core.New(sup, core.Options{Logger: zap.NewNop(), SocketPath: path}), zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Run(ctx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(ln) }()
	clients := make(chan mcpdv1.McpdClient, apps)
	var conns []*grpc.ClientConn
	b.Cleanup(func() {
		for _, c := range conns {
			_ = c.Close()
		}
		gs.Stop()
		<-serveDone
		cancel()
		if err := <-supDone; err != nil {
			b.Errorf("supervisor: %v", err)
		}
	})
	for range apps {
		conn, err := dialApp(path)
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, conn)
		c := mcpdv1.NewMcpdClient(conn)
		if err := callEcho(ctx, c, "fake"); err != nil {
			b.Fatal(err)
		}
		clients <- c
	}
	b.SetParallelism(apps) // with GOMAXPROCS 2: 32 goroutines on 16 connections
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := <-clients
		clients <- c
		for pb.Next() {
			if err := callEcho(ctx, c, "fake"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkHotPathBareParallel is HotPathParallel's ceiling: 16 clients
// (each its own connection) making the bare server-streaming round trip at
// once, with no mcpd code and no child. What a throughput target can ask of
// mcpd on this machine is bounded by it.
func BenchmarkHotPathBareParallel(b *testing.B) {
	const apps = 16
	path := serveInProcess(b, &bareServiceDesc)
	clients := make(chan *bare, apps)
	payload := wrapperspb.String(`{"content":[{"type":"text","text":"hello from mcpd-bench"}]}`)
	for range apps {
		clients <- &bare{conn: dialInProcess(b, path)}
	}
	b.SetParallelism(apps)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := <-clients
		clients <- c
		for pb.Next() {
			if err := c.stream(context.Background(), payload); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// serveInProcess serves desc on a Unix socket in this process until the
// benchmark's cleanup and returns the socket's path.
func serveInProcess(tb testing.TB, desc *grpc.ServiceDesc) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "bare.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		tb.Fatal(err)
	}
	gs := grpc.NewServer()
	gs.RegisterService(desc, nil)
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(ln) }() // owned: cleanup waits for it
	tb.Cleanup(func() {
		gs.Stop()
		<-serveDone
	})
	return path
}

// dialInProcess connects to path; the connection is closed at cleanup
// (before the server registered earlier stops).
func dialInProcess(tb testing.TB, path string) *grpc.ClientConn {
	tb.Helper()
	conn, err := dialApp(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = conn.Close() })
	return conn
}
