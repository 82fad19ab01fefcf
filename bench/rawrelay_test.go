package main

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// rawRelay is the least a gRPC-to-stdio proxy can do, with no mcpd code at
// all: write a request line to the child's stdin, and one goroutine reading
// its stdout hands each response line to its waiter by id.
type rawRelay struct {
	stdin io.Writer

	mu      sync.Mutex // guards waiters, nextID and writes to stdin
	waiters map[int64]chan string
	nextID  int64
}

// startRawRelay spawns the fake server (legacy era) and initializes it.
func startRawRelay(tb testing.TB) *rawRelay {
	tb.Helper()
	cmd, args := fakemcp.Command()
	c := exec.Command(cmd, args...)
	c.Env = append(c.Environ(), fakemcp.Env("legacy,quiet")...)
	in, err := c.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := c.Start(); err != nil {
		tb.Fatal(err)
	}
	r := &rawRelay{stdin: in, waiters: map[int64]chan string{}}
	done := make(chan struct{})
	go func() { // owned: cleanup waits for done
		defer close(done)
		r.readLoop(bufio.NewReaderSize(out, 64<<10))
	}()
	tb.Cleanup(func() {
		_ = in.Close()
		<-done
		_ = c.Wait()
	})
	r.call(`"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	if _, err := in.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")); err != nil {
		tb.Fatal(err)
	}
	return r
}

// readLoop hands each response line to the waiter of its id.
func (r *rawRelay) readLoop(br *bufio.Reader) {
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return
		}
		_, rest, ok := strings.Cut(line, `"id":`)
		if !ok {
			continue
		}
		end := strings.IndexAny(rest, ",}")
		if end < 0 {
			continue
		}
		id, _ := strconv.ParseInt(rest[:end], 10, 64)
		r.mu.Lock()
		ch := r.waiters[id]
		delete(r.waiters, id)
		r.mu.Unlock()
		if ch != nil {
			ch <- line
		}
	}
}

// call sends one request (the members after id) and waits for its line.
func (r *rawRelay) call(members string) string {
	ch := make(chan string, 1)
	r.mu.Lock()
	r.nextID++
	id := r.nextID
	r.waiters[id] = ch
	_, _ = io.WriteString(r.stdin, `{"jsonrpc":"2.0","id":`+strconv.FormatInt(id, 10)+`,`+members+"}\n")
	r.mu.Unlock()
	return <-ch
}

// BenchmarkHotPathRawRelay is HotPathCallTool's round trip through the
// least possible proxy in this process: a bare gRPC server-streaming
// handler relaying to the same fake child (legacy era) over raw pipes, no
// mcpd code. HotPathCallTool/legacy − HotPathRawRelay is mcpd's own code;
// HotPathRawRelay − HotPathDirect/legacy − HotPathBare/stream is what the
// proxy hop costs on this machine.
func BenchmarkHotPathRawRelay(b *testing.B) {
	r := startRawRelay(b)
	if err := checkEcho("fake", r.call(`"method":"tools/call","params":`+string(echoParams))); err != nil {
		b.Fatal(err)
	}
	path := serveInProcess(b, &grpc.ServiceDesc{
		ServiceName: bareService,
		HandlerType: (*any)(nil),
		Streams: []grpc.StreamDesc{{StreamName: "Stream", ServerStreams: true,
			Handler: func(_ any, stream grpc.ServerStream) error {
				in := new(wrapperspb.StringValue)
				if err := stream.RecvMsg(in); err != nil {
					return err
				}
				line := r.call(`"method":"tools/call","params":` + in.Value)
				return stream.SendMsg(wrapperspb.String(line))
			}}},
	})
	conn := dialInProcess(b, path)
	bs := &bare{conn: conn}
	ctx := context.Background()
	params := wrapperspb.String(string(echoParams))
	if err := bs.stream(ctx, params); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := bs.stream(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
}
