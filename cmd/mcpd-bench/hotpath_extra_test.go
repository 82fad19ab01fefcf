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

	"github.com/mcpd-dev/mcpd/internal/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// BenchmarkHotPathBare is the in-process baseline of the HotPath
// benchmarks: a bare gRPC server (no mcpd code) on a Unix socket in this
// process, answering the same kind of round trip as CallTool (a
// server-streaming RPC with one message back) and as a unary RPC, with a
// payload the size of the echo result. mcpd's own cost in one process is
// about HotPathCallTool − HotPathDirect − HotPathBare/stream.
func BenchmarkHotPathBare(b *testing.B) {
	path := filepath.Join(b.TempDir(), "bare.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		b.Fatal(err)
	}
	gs := grpc.NewServer()
	gs.RegisterService(&bareServiceDesc, nil)
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(ln) }()
	conn, err := dialApp(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
		<-serveDone
	})
	bs := &bare{conn: conn}
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
