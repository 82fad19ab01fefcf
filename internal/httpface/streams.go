package httpface

import (
	"context"
	"io"

	"github.com/mcpd-dev/mcpd/internal/service"
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
// the service's error for a stream cut by its own cancellation (Canceled,
// DeadlineExceeded) or by the daemon stopping (Unavailable), else io.EOF.
func (c *streamCore) end() error {
	switch {
	case c.caller.Err() != nil:
		return service.ErrorOf(c.caller.Err())
	case c.handlerErr != nil:
		return c.handlerErr
	case c.life.Err() != nil:
		return service.Errorf(service.Unavailable, "%s", errStopped)
	}
	return io.EOF
}

// send hands m to the other side, or fails once the handler's context ended.
func send[T any](c *streamCore, ch chan<- *T, m *T) error {
	select {
	case ch <- m:
		return nil
	case <-c.ctx.Done():
		return service.ErrorOf(c.ctx.Err())
	}
}

// recvStream is a server-streaming call served in process: what the
// service sends reaches the caller's Recv (bridge.RecvStream).
type recvStream[T any] struct {
	streamCore
	out chan *T
}

func newRecvStream[T any](b *Backend, ctx context.Context) *recvStream[T] {
	return &recvStream[T]{streamCore: newStreamCore(b, ctx), out: make(chan *T)}
}

// Recv returns the service's next message, or the stream's end.
func (s *recvStream[T]) Recv() (*T, error) {
	select {
	case m := <-s.out:
		return m, nil
	case <-s.done:
		return nil, s.end()
	}
}

// send is the service's send.
func (s *recvStream[T]) send(m *T) error { return send(&s.streamCore, s.out, m) }

// hostStream is a host registration served in process: the caller's end
// is a bridge.HostStream, the service's an api.HostConn (hostSide).
type hostStream struct {
	streamCore
	in  chan *mcpdv1.HostRequest  // caller → service
	out chan *mcpdv1.HostResponse // service → caller
}

func newHostStream(b *Backend, ctx context.Context) *hostStream {
	return &hostStream{streamCore: newStreamCore(b, ctx), in: make(chan *mcpdv1.HostRequest), out: make(chan *mcpdv1.HostResponse)}
}

// Send gives the service m; io.EOF once the stream ended, as on gRPC,
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

// Recv returns the service's next message, or the stream's end.
func (h *hostStream) Recv() (*mcpdv1.HostResponse, error) {
	select {
	case m := <-h.out:
		return m, nil
	case <-h.done:
		return nil, h.end()
	}
}

// hostSide is the service's end of a hostStream (api.HostConn).
type hostSide struct{ *hostStream }

func (s hostSide) Send(m *mcpdv1.HostResponse) error { return send(&s.streamCore, s.out, m) }

func (s hostSide) Recv() (*mcpdv1.HostRequest, error) {
	select {
	case m := <-s.in:
		return m, nil
	case <-s.ctx.Done():
		return nil, service.ErrorOf(s.ctx.Err())
	}
}

// eventMessage is a call's event as mcpd.v1 sends it.
func eventMessage(ev service.Event) *mcpdv1.CallToolEvent {
	if ev.Kind == service.Message {
		return &mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_MessageJson{MessageJson: string(ev.Params)}}
	}
	return &mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: string(ev.Params)}}
}

// responseMessage is a call's response as mcpd.v1 sends it.
func responseMessage(r *service.Response) *mcpdv1.McpResponse {
	out := &mcpdv1.McpResponse{Server: r.Server, ResultJson: string(r.Result), DurationUs: r.Duration.Microseconds()}
	switch r.Cache {
	case service.Hit:
		out.Cache = mcpdv1.CacheStatus_CACHE_STATUS_HIT
	case service.Coalesced:
		out.Cache = mcpdv1.CacheStatus_CACHE_STATUS_COALESCED
	default:
		out.Cache = mcpdv1.CacheStatus_CACHE_STATUS_FETCHED
	}
	if e := r.Error; e != nil {
		out.Error = &mcpdv1.McpError{Code: e.Code, Message: e.Message, DataJson: string(e.Data)}
	}
	return out
}
