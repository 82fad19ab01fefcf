package apiclient

import (
	"context"
	"errors"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TellLostCalls makes a call that went out to mcpd on an established
// connection, and then ended UNAVAILABLE by gRPC's own verdict (no mcpd
// class: the connection broke), fail with an error LostConnection
// reports. Without it such a call looks like one that found no mcpd.
func TellLostCalls() Option {
	return DialOptions(
		grpc.WithStatsHandler(sentMarker{}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx, sent := withSent(ctx)
			return lostOr(invoker(ctx, method, req, reply, cc, opts...), sent)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			ctx, sent := withSent(ctx)
			s, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, lostOr(err, sent)
			}
			return &lostStream{ClientStream: s, sent: sent}, nil
		}),
	)
}

// LostConnection reports whether err is a call that went out to mcpd and
// lost its connection before mcpd answered (TellLostCalls).
func LostConnection(err error) bool {
	var l *lostError
	return errors.As(err, &l)
}

// lostError is a call's UNAVAILABLE status after it went out.
type lostError struct{ st *status.Status }

func (e *lostError) Error() string              { return e.st.Err().Error() }
func (e *lostError) GRPCStatus() *status.Status { return e.st }

// lostOr is err, or a lostError when the call went out and err is gRPC's
// UNAVAILABLE rather than mcpd's.
func lostOr(err error, sent *atomic.Bool) error {
	if err == nil || !sent.Load() {
		return err
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return err
	}
	if reason, _ := mcpdv1.ReasonOf(err); reason != mcpdv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		return err
	}
	return &lostError{st: st}
}

// lostStream is a stream whose errors say when its connection was lost.
type lostStream struct {
	grpc.ClientStream
	sent *atomic.Bool
}

func (s *lostStream) SendMsg(m any) error { return lostOr(s.ClientStream.SendMsg(m), s.sent) }
func (s *lostStream) RecvMsg(m any) error { return lostOr(s.ClientStream.RecvMsg(m), s.sent) }

type sentKey struct{}

// withSent returns ctx with a flag that sentMarker sets once the call's
// headers went out on a connection.
func withSent(ctx context.Context) (context.Context, *atomic.Bool) {
	sent := new(atomic.Bool)
	return context.WithValue(ctx, sentKey{}, sent), sent
}

// sentMarker is the stats handler that sets a call's flag (withSent) when
// its headers go out.
type sentMarker struct{}

func (sentMarker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (sentMarker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (sentMarker) HandleConn(context.Context, stats.ConnStats) {}

func (sentMarker) HandleRPC(ctx context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.OutHeader); !ok {
		return
	}
	if sent, ok := ctx.Value(sentKey{}).(*atomic.Bool); ok {
		sent.Store(true)
	}
}
