package bridge

import (
	"github.com/mcpd-dev/mcpd/internal/apiclient"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// GRPCBackend's calls fail as mcpd's in-process backend's do, with the
// service's errors (service.Error): each gRPC status is read back as one
// (apiclient.ServiceError) where the call returns, so that the bridge
// tells failures apart by class and code, never by gRPC status.

// grpcResult is the result of a unary call, its error the service's.
func grpcResult[T any](v T, err error) (T, error) {
	return v, apiclient.ServiceError(err)
}

// grpcStream is the stream of a server-streaming call, its errors the
// service's.
func grpcStream[T any](s RecvStream[T], err error) (RecvStream[T], error) {
	if err != nil {
		return nil, apiclient.ServiceError(err)
	}
	return grpcRecv[T]{s}, nil
}

// grpcRecv is a server stream whose errors are the service's.
type grpcRecv[T any] struct{ s RecvStream[T] }

func (r grpcRecv[T]) Recv() (*T, error) {
	v, err := r.s.Recv()
	return v, apiclient.ServiceError(err)
}

// grpcHost is the Host stream, its errors the service's.
func grpcHost(s HostStream, err error) (HostStream, error) {
	if err != nil {
		return nil, apiclient.ServiceError(err)
	}
	return grpcHostStream{s}, nil
}

// grpcHostStream is a Host stream whose errors are the service's.
type grpcHostStream struct{ s HostStream }

func (h grpcHostStream) Send(m *mcpdv1.HostRequest) error {
	return apiclient.ServiceError(h.s.Send(m))
}

func (h grpcHostStream) Recv() (*mcpdv1.HostResponse, error) {
	m, err := h.s.Recv()
	return m, apiclient.ServiceError(err)
}
