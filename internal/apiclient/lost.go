package apiclient

import (
	"context"
	"errors"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// TellLostCalls makes a call that went out to mcpd on an established
// connection, and then ended UNAVAILABLE with no status from mcpd (gRPC's
// own verdict: the connection broke), fail with an error LostConnection
// reports. Without it such a call looks like one that found no mcpd.
func TellLostCalls() Option {
	return DialOptions(
		grpc.WithStatsHandler(progressMarker{}),
		grpc.WithChainUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			ctx, p := withProgress(ctx)
			return lostOr(invoker(ctx, method, req, reply, cc, opts...), p)
		}),
		grpc.WithChainStreamInterceptor(func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
			ctx, p := withProgress(ctx)
			s, err := streamer(ctx, desc, cc, method, opts...)
			if err != nil {
				return nil, lostOr(err, p)
			}
			return &lostStream{ClientStream: s, p: p}, nil
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
// UNAVAILABLE, mcpd having sent no status.
func lostOr(err error, p *progress) error {
	if err == nil || !p.sent.Load() || p.answered.Load() {
		return err
	}
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.Unavailable {
		return err
	}
	return &lostError{st: st}
}

// lostStream is a stream whose errors say when its connection was lost.
type lostStream struct {
	grpc.ClientStream
	p *progress
}

func (s *lostStream) SendMsg(m any) error { return lostOr(s.ClientStream.SendMsg(m), s.p) }
func (s *lostStream) RecvMsg(m any) error { return lostOr(s.ClientStream.RecvMsg(m), s.p) }

// progress is how far a call got, which progressMarker records.
type progress struct {
	sent     atomic.Bool // its headers went out on a connection
	answered atomic.Bool // mcpd's status (the trailers) came back
}

type progressKey struct{}

// withProgress returns ctx with the progress of the call made with it.
func withProgress(ctx context.Context) (context.Context, *progress) {
	p := new(progress)
	return context.WithValue(ctx, progressKey{}, p), p
}

// progressMarker is the stats handler that records a call's progress
// (withProgress).
type progressMarker struct{}

func (progressMarker) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (progressMarker) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (progressMarker) HandleConn(context.Context, stats.ConnStats) {}

func (progressMarker) HandleRPC(ctx context.Context, s stats.RPCStats) {
	p, ok := ctx.Value(progressKey{}).(*progress)
	if !ok {
		return
	}
	switch s.(type) {
	case *stats.OutHeader:
		p.sent.Store(true)
	case *stats.InTrailer:
		p.answered.Store(true)
	}
}
