package bridgegrpc

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/apiconv"
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Send is the SendRequest RPC: the stream's progress and log messages go
// to onEvent, in order; its response is returned, nil when mcpd ended the
// stream without one. req's params are sent as they are, not copied.
func (g *Backend) Send(ctx context.Context, req service.Request, onEvent func(service.Event)) (*service.Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the stream (and gRPC's goroutine watching it) once the response is in
	stream, err := g.client.SendRequest(outgoing(ctx), apiconv.RequestToProto(req))
	if err != nil {
		return nil, apiclient.ServiceError(err)
	}
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		if err != nil {
			return nil, apiclient.ServiceError(err)
		}
		if e, ok := apiconv.EventOf(ev); ok {
			onEvent(e)
		} else if r := ev.GetResponse(); r != nil {
			return apiconv.ResponseOf(r), nil
		}
	}
}

// Watch is the Subscribe RPC: each event of the stream, the
// acknowledgement first, goes to send until the stream ends (its error,
// nil once ctx ended) or send fails (nil).
func (g *Backend) Watch(ctx context.Context, w service.Watch, send func(service.SubscriptionEvent) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := g.client.Subscribe(outgoing(ctx), apiconv.WatchToProto(w))
	if err != nil {
		return apiclient.ServiceError(err)
	}
	for {
		ev, err := stream.Recv()
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return apiclient.ServiceError(err)
		}
		if send(apiconv.SubscriptionEventOf(ev)) != nil {
			return nil
		}
	}
}

// ServeHost is the Host RPC: it registers reg, calls registered once mcpd
// confirmed it, and then, until ctx or the stream ends, answers each call
// mcpd routes to the host with answer on a goroutine of its own (its
// context ends when mcpd cancels the call) and passes notifications to
// notify. It returns once every answer's goroutine did.
func (g *Backend) ServeHost(ctx context.Context, reg service.HostRegistration, registered func(), answer service.HostAnswerer, notify service.HostNotifier) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := g.client.Host(outgoing(ctx))
	if err != nil {
		return apiclient.ServiceError(err)
	}
	err = stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: apiconv.HostRegistrationToProto(reg)}})
	if err != nil {
		return apiclient.ServiceError(err)
	}
	m, err := stream.Recv()
	if err != nil {
		return apiclient.ServiceError(err)
	}
	if m.GetRegistered() == nil {
		return errors.New("mcpd did not confirm the host's registration")
	}
	registered()
	h := &hostCalls{stream: stream, calls: map[uint64]context.CancelFunc{}}
	defer h.wg.Wait()
	for {
		m, err := stream.Recv()
		if err != nil {
			cancel() // ends the calls still waiting for the host
			return apiclient.ServiceError(err)
		}
		switch msg := m.GetMsg().(type) {
		case *mcpdv1.HostResponse_Call:
			h.start(ctx, msg.Call, answer)
		case *mcpdv1.HostResponse_Cancel:
			h.cancel(msg.Cancel.GetCallId())
		case *mcpdv1.HostResponse_Notification:
			n := msg.Notification
			notify(n.GetServer(), n.GetMethod(), stringRaw(n.GetParamsJson()))
		}
	}
}

// hostCalls are the calls of a Host stream being answered.
type hostCalls struct {
	stream mcpdv1.Mcpd_HostClient
	wg     sync.WaitGroup
	sendMu sync.Mutex // serialises stream.Send: one message at a time on the stream

	mu    sync.Mutex // guards calls
	calls map[uint64]context.CancelFunc
}

// start answers call on a goroutine, under a context of ctx that cancel
// ends.
func (h *hostCalls) start(ctx context.Context, call *mcpdv1.HostCall, answer service.HostAnswerer) {
	cctx, ccancel := context.WithCancel(ctx)
	id := call.GetCallId()
	h.mu.Lock()
	h.calls[id] = ccancel
	h.mu.Unlock()
	h.wg.Go(func() {
		defer func() {
			h.mu.Lock()
			delete(h.calls, id)
			h.mu.Unlock()
			ccancel()
		}()
		res, rerr := answer(cctx, call.GetServer(), call.GetMethod(), stringRaw(call.GetParamsJson()))
		if cctx.Err() != nil {
			return // cancelled by the child, or the stream ended
		}
		ans := &mcpdv1.HostAnswer{CallId: id}
		if rerr != nil {
			ans.Error = apiconv.ErrorToProto(rerr)
		} else {
			ans.ResultJson = string(res)
		}
		h.sendMu.Lock()
		defer h.sendMu.Unlock()
		_ = h.stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Answer{Answer: ans}})
	})
}

// cancel ends the call id, if it is still being answered.
func (h *hostCalls) cancel(id uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.calls[id]; c != nil {
		c()
	}
}

// stringRaw is s as JSON text: a copy, the receiver's to keep.
func stringRaw(s string) []byte { return []byte(s) }
