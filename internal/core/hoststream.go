package core

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// HostStream is a host's registration as a door carries it: the gRPC
// door's Host stream. Only one goroutine calls its Send methods; another
// calls Recv.
type HostStream interface {
	// SendCall passes a server's request to the host.
	SendCall(id uint64, server, method string, params json.RawMessage) error
	// SendCancel tells the host that call id is no longer wanted.
	SendCancel(id uint64, reason string) error
	// SendNotice passes a notification about a request the host answered
	// (notifications/elicitation/complete).
	SendNotice(server, method string, params json.RawMessage) error
	// Recv returns the host's next answer: a result or a JSON-RPC error
	// for call id; io.EOF when the host ended the registration.
	Recv() (id uint64, result json.RawMessage, rerr *jsonrpc.Error, err error)
}

// ServeHostStream registers the app of ctx as a host, as ServeHost does,
// and serves the registration on stream until the host ends it or ctx
// ends: registered is told the host's id first (its error ends the
// registration, as a host that left).
func (s *Service) ServeHostStream(ctx context.Context, reg service.HostRegistration, registered func(id uint64) error, stream HostStream) error {
	h, servers, err := s.registerHost(ctx, reg)
	if err != nil {
		return ToError(err)
	}
	defer s.hosts.unregister(h)
	log := s.log.With(zap.Uint64("host_id", h.id), zap.String("app", h.name))
	log.Debug("host registered", zap.Strings("servers", servers),
		zap.Bool("roots", h.caps.roots), zap.Bool("sampling", h.caps.sampling), zap.Bool("elicitation", h.caps.elicitation))
	if registered(h.id) != nil {
		return nil
	}
	// The sender goroutine writes calls and cancels; this goroutine reads
	// answers. Only one goroutine sends on the stream.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { sendHostMessages(ctx, stream, h, stop, log) })
	defer func() {
		close(stop)
		wg.Wait()
	}()
	return ToError(receiveHostAnswers(ctx, stream, h, log))
}

// sendHostMessages writes h's calls, cancels and notifications to stream
// until stop is closed, ctx ends or a send fails.
func sendHostMessages(ctx context.Context, stream HostStream, h *host, stop <-chan struct{}, log *zap.Logger) {
	for {
		var err error
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case m := <-h.out:
			switch m := m.(type) {
			case hostCall:
				err = stream.SendCall(m.id, m.server, m.method, m.params)
			case hostCancel:
				err = stream.SendCancel(m.id, m.reason)
			case hostNotice:
				err = stream.SendNotice(m.server, m.method, m.params)
			}
		}
		if err != nil {
			log.Debug("host send failed", zap.Error(err))
			return
		}
	}
}

// receiveHostAnswers delivers the answers read from stream to h's calls
// until the host ends the stream.
func receiveHostAnswers(ctx context.Context, stream HostStream, h *host, log *zap.Logger) error {
	for {
		id, result, rerr, err := stream.Recv()
		if errors.Is(err, io.EOF) || ctx.Err() != nil {
			log.Debug("host unregistered")
			return nil
		}
		if errors.Is(err, ErrNotAnswer) {
			return codeError(service.InvalidArgument, "only answers may follow the registration")
		}
		if err != nil {
			log.Debug("host stream failed", zap.Error(err))
			return nil
		}
		h.deliver(id, hostAnswerFrom(result, rerr))
	}
}

// ErrNotAnswer is what a HostStream's Recv returns for a message that is
// no answer: the registration ends with INVALID_ARGUMENT.
var ErrNotAnswer = errors.New("not an answer")
