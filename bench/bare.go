package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The bare gRPC baseline: a separate process (this binary re-executed with
// -serve-bare) serving one unary method on a Unix socket, with no mcpd code
// behind it. Echo returns its request; Blob returns a string of the
// requested size, the stand-in for a cached list of that size.
const (
	bareService    = "mcpdbench.Bare"
	bareEchoMethod = "/" + bareService + "/Echo"
	bareBlobMethod = "/" + bareService + "/Blob"
	// bareStreamMethod is Echo as a server-streaming RPC (one message
	// back), the shape of mcpd's CallTool.
	bareStreamMethod = "/" + bareService + "/Stream"
)

// bareStreamDesc describes the Stream method for the client.
var bareStreamDesc = grpc.StreamDesc{StreamName: "Stream", ServerStreams: true}

// bareServiceDesc is written by hand: the messages are protobuf
// well-known wrappers, so nothing needs generating.
var bareServiceDesc = grpc.ServiceDesc{
	ServiceName: bareService,
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{
		{
			MethodName: "Echo",
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.StringValue)
				if err := dec(in); err != nil {
					return nil, err
				}
				return in, nil
			},
		},
		{
			MethodName: "Blob",
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.Int64Value)
				if err := dec(in); err != nil {
					return nil, err
				}
				n := min(max(in.Value, 0), 64<<20)
				return wrapperspb.String(strings.Repeat("x", int(n))), nil
			},
		},
	},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Stream",
		ServerStreams: true,
		Handler: func(_ any, stream grpc.ServerStream) error {
			in := new(wrapperspb.StringValue)
			if err := stream.RecvMsg(in); err != nil {
				return err
			}
			return stream.SendMsg(in)
		},
	}},
}

// The bare fan-out baseline (section 5): Watch streams every message that
// Fire is given to each open Watch stream, each through its own buffered
// queue and handler goroutine, as mcpd's subscription streams do; no
// mcpd code.
const (
	bareFanOutService = "mcpdbench.BareFanOut"
	bareWatchMethod   = "/" + bareFanOutService + "/Watch"
	bareFireMethod    = "/" + bareFanOutService + "/Fire"
)

// bareWatchDesc describes the Watch method for the client.
var bareWatchDesc = grpc.StreamDesc{StreamName: "Watch", ServerStreams: true}

// fanOutHub is the bare fan-out server's set of watchers.
type fanOutHub struct {
	mu       sync.Mutex
	watchers map[chan *wrapperspb.StringValue]struct{}
}

// serviceDesc serves Watch and Fire on h.
func (h *fanOutHub) serviceDesc() *grpc.ServiceDesc {
	return &grpc.ServiceDesc{
		ServiceName: bareFanOutService,
		HandlerType: (*any)(nil),
		Methods: []grpc.MethodDesc{{
			MethodName: "Fire",
			Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				in := new(wrapperspb.StringValue)
				if err := dec(in); err != nil {
					return nil, err
				}
				h.fire(in)
				return &emptypb.Empty{}, nil
			},
		}},
		Streams: []grpc.StreamDesc{{
			StreamName:    "Watch",
			ServerStreams: true,
			Handler:       func(_ any, stream grpc.ServerStream) error { return h.watch(stream) },
		}},
	}
}

// watch registers the stream, acknowledges it with an empty message and
// sends it every fired message until the app goes away.
func (h *fanOutHub) watch(stream grpc.ServerStream) error {
	if err := stream.RecvMsg(new(emptypb.Empty)); err != nil {
		return err
	}
	ch := make(chan *wrapperspb.StringValue, 64)
	h.mu.Lock()
	if h.watchers == nil {
		h.watchers = map[chan *wrapperspb.StringValue]struct{}{}
	}
	h.watchers[ch] = struct{}{}
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.watchers, ch)
		h.mu.Unlock()
	}()
	if err := stream.SendMsg(&wrapperspb.StringValue{}); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case m := <-ch:
			if err := stream.SendMsg(m); err != nil {
				return err
			}
		}
	}
}

// fire queues m for every watcher (dropping it for one whose queue is full).
func (h *fanOutHub) fire(m *wrapperspb.StringValue) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.watchers {
		select {
		case ch <- m:
		default:
		}
	}
}

// serveBare runs the bare gRPC server on path until SIGTERM or SIGINT.
func serveBare(path string) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("listen %s: %w", path, err)
	}
	gs := grpc.NewServer()
	gs.RegisterService(&bareServiceDesc, nil)
	gs.RegisterService(new(fanOutHub).serviceDesc(), nil)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGTERM, os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- gs.Serve(ln) }() // owned: waited for below
	select {
	case <-sigc:
		gs.Stop()
		<-done
		return nil
	case err := <-done:
		return err
	}
}

// bare is a running bare server process and a client connection to it.
type bare struct {
	cmd  *exec.Cmd
	conn *grpc.ClientConn
}

// startBare starts the bare server on path (same kind of socket as mcpd's).
func startBare(ctx context.Context, reg *registry, path string) (*bare, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	cmd := exec.Command(self, "-serve-bare", path)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start bare grpc server: %w", err)
	}
	reg.add(cmd.Process.Pid)
	b := &bare{cmd: cmd}
	if err := waitSocket(ctx, path, 10*time.Second); err != nil {
		b.close()
		return nil, fmt.Errorf("bare grpc server: %w", err)
	}
	conn, err := dialFloor(path)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("dial bare grpc server: %w", err)
	}
	b.conn = conn
	return b, nil
}

// echo makes one unary round trip carrying payload both ways.
func (b *bare) echo(ctx context.Context, payload *wrapperspb.StringValue) error {
	out := new(wrapperspb.StringValue)
	if err := b.conn.Invoke(ctx, bareEchoMethod, payload, out); err != nil {
		return fmt.Errorf("bare echo: %w", err)
	}
	if len(out.Value) != len(payload.Value) {
		return errors.New("bare echo: payload changed")
	}
	return nil
}

// stream makes one server-streaming round trip (request, one message back,
// end of stream), as a CallTool client does.
func (b *bare) stream(ctx context.Context, payload *wrapperspb.StringValue) error {
	_, err := streamOnce(ctx, b.conn, &bareStreamDesc, bareStreamMethod, payload)
	if err != nil {
		return fmt.Errorf("bare stream: %w", err)
	}
	return nil
}

// streamOnce sends in on a new server-streaming call of method and returns
// its one message, checking that the stream then ends.
func streamOnce(ctx context.Context, conn *grpc.ClientConn, desc *grpc.StreamDesc, method string, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := conn.NewStream(ctx, desc, method)
	if err != nil {
		return nil, err
	}
	if err := st.SendMsg(in); err != nil {
		return nil, err
	}
	if err := st.CloseSend(); err != nil {
		return nil, err
	}
	out := new(wrapperspb.StringValue)
	if err := st.RecvMsg(out); err != nil {
		return nil, err
	}
	if err := st.RecvMsg(new(wrapperspb.StringValue)); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("want end of stream, got %v", err)
	}
	return out, nil
}

// blob fetches n bytes in one unary round trip.
func (b *bare) blob(ctx context.Context, n int64) error {
	out := new(wrapperspb.StringValue)
	if err := b.conn.Invoke(ctx, bareBlobMethod, wrapperspb.Int64(n), out); err != nil {
		return fmt.Errorf("bare blob: %w", err)
	}
	if int64(len(out.Value)) != n {
		return errors.New("bare blob: wrong size")
	}
	return nil
}

// close stops the server process (SIGTERM to its pid, SIGKILL if it
// lingers) and reaps it.
func (b *bare) close() {
	if b.conn != nil {
		_ = b.conn.Close()
	}
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { // owned: waited for below
		_ = b.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = b.cmd.Process.Kill()
		<-done
	}
}

// waitSocket polls until a Unix socket at path accepts a connection.
func waitSocket(ctx context.Context, path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.Dial("unix", path)
		if err == nil {
			_ = c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("socket %s not answering after %v: %w", path, timeout, err)
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Microsecond)
	}
}

// dialFloor opens a plain gRPC connection to a floor's socket (the bare
// server's, the relay's). It does not go through mcpd's client package
// (internal/apiclient, dialApp): a floor measures gRPC alone.
func dialFloor(path string) (*grpc.ClientConn, error) {
	return grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
}
