package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The Go benchmarks of the hot path, for profiling in one process:
//
//	go test ./bench -run '^$' -bench HotPath -cpuprofile cpu.out
//	go tool pprof -top cpu.out
//
// The child is the fake MCP server (this test binary re-executed), so the
// profile shows mcpd's api → supervisor → session → transport path plus the
// gRPC client; the Direct benchmark is the same call without mcpd.

// fakeEnv returns the child's environment as supervisor.Spec wants it.
func fakeEnv(mode string) map[string]string {
	env := map[string]string{}
	for _, kv := range fakemcp.Env(mode) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return env
}

// inProcess wires a supervisor and the gRPC API on a temporary socket, as
// cmd/mcpd does, and returns a client; everything stops at cleanup.
func inProcess(tb testing.TB, mode string, opts ...grpc.ServerOption) mcpdv1.McpdClient {
	tb.Helper()
	c, _ := inProcessServer(tb, mode, opts...)
	return c
}

// inProcessServer is inProcess that also returns the core.Service.
func inProcessServer(tb testing.TB, mode string, opts ...grpc.ServerOption) (mcpdv1.McpdClient, *core.Service) {
	tb.Helper()
	cmd, args := fakemcp.Command()
	sup := supervisor.New(supervisor.Options{
		Specs:  []supervisor.Spec{{Name: "fake", Command: cmd, Args: args, Env: fakeEnv(mode)}},
		Logger: zap.NewNop(),
	})
	path := filepath.Join(tb.TempDir(), "s", "mcpd.sock") // Listen creates s/ with 0700
	ln, err := socket.Listen(path)
	if err != nil {
		tb.Fatal(err)
	}
	srv := core.New(sup, core.Options{Logger: zap.NewNop(), SocketPath: path})
	gs := api.NewGRPCServer(srv, zap.NewNop(), opts...)
	ctx, cancel := context.WithCancel(context.Background())
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Run(ctx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(ln) }()
	conn, err := dialApp(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
		<-serveDone
		cancel()
		if err := <-supDone; err != nil {
			tb.Errorf("supervisor: %v", err)
		}
	})
	return mcpdv1.NewMcpdClient(conn), srv
}

func BenchmarkHotPathCallTool(b *testing.B) {
	for _, mode := range []string{"modern,quiet", "legacy,quiet"} {
		b.Run(strings.Split(mode, ",")[0], func(b *testing.B) {
			c := inProcess(b, mode)
			ctx := context.Background()
			if err := callEcho(ctx, c, "fake"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := callEcho(ctx, c, "fake"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHotPathDirect(b *testing.B) {
	for _, mode := range []string{"modern,quiet", "legacy,quiet"} {
		b.Run(strings.Split(mode, ",")[0], func(b *testing.B) {
			cmd, args := fakemcp.Command()
			proc, err := transport.Start(transport.Options{Name: "fake", Command: cmd, Args: args, Env: fakemcp.Env(mode)})
			if err != nil {
				b.Fatal(err)
			}
			sess := session.New(proc, session.Options{Server: "fake"})
			b.Cleanup(func() {
				_ = proc.Stop()
				sess.Wait()
			})
			ctx := context.Background()
			if _, err := sess.Handshake(ctx); err != nil {
				b.Fatal(err)
			}
			d := &direct{t: target{Name: "fake"}, proc: proc, sess: sess}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := d.echo(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
