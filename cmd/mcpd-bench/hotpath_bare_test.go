package main

import (
	"net"
	"path/filepath"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"
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
