package httpface

import (
	"context"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// streamCore is what the in-process streams share: the handler's context,
// which ends with the caller's, with Backend.Close or when the handler
// returned, and the handler's outcome. Messages pass through unbuffered
// channels, so a message sent before the handler returned is always
// received before its end is seen.
type streamCore struct {
	caller     context.Context // the caller's context
	ctx        context.Context // the handler's
	cancel     context.CancelFunc
	unlink     func() bool // stops Backend.Close from cancelling ctx
	life       context.Context
	done       chan struct{} // closed when the handler returned
	handlerErr error         // the handler's return; read after done
}

func newStreamCore(b *Backend, caller context.Context) streamCore {
	ctx, cancel := context.WithCancel(caller)
	return streamCore{
		caller: caller, ctx: ctx, cancel: cancel,
		unlink: context.AfterFunc(b.life, cancel),
		life:   b.life,
		done:   make(chan struct{}),
	}
}

// finish records the handler's return and ends the stream.
func (c *streamCore) finish(err error) {
	c.handlerErr = err
	close(c.done)
	c.unlink()
	c.cancel()
}

// end is the caller's error once the handler returned: the handler's, or
// what a gRPC client would see for a stream cut by its own cancellation
// (CANCELED, DEADLINE_EXCEEDED) or by the daemon stopping (UNAVAILABLE),
// else io.EOF.
func (c *streamCore) end() error {
	switch {
	case c.caller.Err() != nil:
		return status.FromContextError(c.caller.Err()).Err()
	case c.handlerErr != nil:
		return c.handlerErr
	case c.life.Err() != nil:
		return status.Error(codes.Unavailable, errStopped.Error())
	}
	return io.EOF
}

// The handler side's grpc.ServerStream methods that have nothing to do in
// process.
func (c *streamCore) Context() context.Context     { return c.ctx }
func (c *streamCore) SetHeader(metadata.MD) error  { return nil }
func (c *streamCore) SendHeader(metadata.MD) error { return nil }
func (c *streamCore) SetTrailer(metadata.MD)       {}

// send hands m to the other side, or fails once the handler's context ended.
func send[T any](c *streamCore, ch chan<- *T, m *T) error {
	select {
	case ch <- m:
		return nil
	case <-c.ctx.Done():
		return status.FromContextError(c.ctx.Err()).Err()
	}
}

// serverStream is a server-streaming call: the handler's grpc.ServerStream
// and the caller's bridge.RecvStream.
type serverStream[T any] struct {
	streamCore
	first any  // the request; the handler's first RecvMsg takes it
	taken bool // used only by the handler's goroutine
	out   chan *T
}

func newServerStream[T any](b *Backend, ctx context.Context, first any) *serverStream[T] {
	return &serverStream[T]{streamCore: newStreamCore(b, ctx), first: first, out: make(chan *T)}
}

// Recv returns the handler's next message, or the stream's end.
func (s *serverStream[T]) Recv() (*T, error) {
	select {
	case m := <-s.out:
		return m, nil
	case <-s.done:
		return nil, s.end()
	}
}

// SendMsg is the handler's send.
func (s *serverStream[T]) SendMsg(m any) error {
	t, ok := m.(*T)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream: cannot send %T", m)
	}
	return send(&s.streamCore, s.out, t)
}

// RecvMsg gives the handler the request: m itself when it is the request
// (no copy), else a copy of it; a server-streaming call has no more.
func (s *serverStream[T]) RecvMsg(m any) error {
	if s.taken {
		return io.EOF
	}
	s.taken = true
	if m == s.first {
		return nil
	}
	dst, ok1 := m.(proto.Message)
	src, ok2 := s.first.(proto.Message)
	if !ok1 || !ok2 {
		return status.Errorf(codes.Internal, "in-process stream: cannot receive into %T", m)
	}
	proto.Merge(dst, src)
	return nil
}

// hostStream is the caller's end of a Host call (bridge.HostStream).
type hostStream struct {
	streamCore
	in  chan *mcpdv1.HostRequest  // caller → handler
	out chan *mcpdv1.HostResponse // handler → caller
}

func newHostStream(b *Backend, ctx context.Context) *hostStream {
	return &hostStream{streamCore: newStreamCore(b, ctx), in: make(chan *mcpdv1.HostRequest), out: make(chan *mcpdv1.HostResponse)}
}

// run runs the Host handler h on the stream and records its end.
func (h *hostStream) run(handler func(grpc.BidiStreamingServer[mcpdv1.HostRequest, mcpdv1.HostResponse]) error) {
	h.finish(handler(hostHandlerSide{h}))
}

// Send gives the handler m; io.EOF once the stream ended, as on gRPC,
// where Recv then says why.
func (h *hostStream) Send(m *mcpdv1.HostRequest) error {
	select {
	case h.in <- m:
		return nil
	case <-h.done:
		return io.EOF
	case <-h.caller.Done():
		return io.EOF
	}
}

// Recv returns the handler's next message, or the stream's end.
func (h *hostStream) Recv() (*mcpdv1.HostResponse, error) {
	select {
	case m := <-h.out:
		return m, nil
	case <-h.done:
		return nil, h.end()
	}
}

// hostHandlerSide is the Host handler's end of a hostStream.
type hostHandlerSide struct{ *hostStream }

func (s hostHandlerSide) Send(m *mcpdv1.HostResponse) error { return send(&s.streamCore, s.out, m) }

func (s hostHandlerSide) Recv() (*mcpdv1.HostRequest, error) {
	select {
	case m := <-s.in:
		return m, nil
	case <-s.ctx.Done():
		return nil, status.FromContextError(s.ctx.Err()).Err()
	}
}

func (s hostHandlerSide) SendMsg(m any) error {
	t, ok := m.(*mcpdv1.HostResponse)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream: cannot send %T", m)
	}
	return s.Send(t)
}

func (s hostHandlerSide) RecvMsg(m any) error {
	got, err := s.Recv()
	if err != nil {
		return err
	}
	dst, ok := m.(*mcpdv1.HostRequest)
	if !ok {
		return status.Errorf(codes.Internal, "in-process stream: cannot receive into %T", m)
	}
	proto.Merge(dst, got)
	return nil
}
