package api

import (
	"context"
	"errors"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// grpcCodes is the one mapping from a service error's code to its gRPC
// code; the code of a classed error is its class's (service.Class.Code).
var grpcCodes = map[service.Code]codes.Code{
	service.Unknown:            codes.Unknown,
	service.Canceled:           codes.Canceled,
	service.InvalidArgument:    codes.InvalidArgument,
	service.DeadlineExceeded:   codes.DeadlineExceeded,
	service.NotFound:           codes.NotFound,
	service.PermissionDenied:   codes.PermissionDenied,
	service.ResourceExhausted:  codes.ResourceExhausted,
	service.FailedPrecondition: codes.FailedPrecondition,
	service.Aborted:            codes.Aborted,
	service.Unimplemented:      codes.Unimplemented,
	service.Internal:           codes.Internal,
	service.Unavailable:        codes.Unavailable,
	service.Unauthenticated:    codes.Unauthenticated,
}

// toStatus is the one mapping from the service's errors to gRPC status
// errors, at the gRPC door (statusUnary, statusStream): a domain error is
// first made a service error (core.ToError); the status's code is the
// error's (its class's for a classed one), and a classed error carries an
// ErrorInfo with its class as reason and its metadata. A status that is
// no service error's (a stream's own Send failed) is returned as it is.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, isService := errors.AsType[*service.Error](err); !isService {
		if _, ok := status.FromError(err); ok {
			return err
		}
	}
	err = core.ToError(err)
	e := service.ErrorOf(err)
	code := codes.Internal
	if e.Class != "" {
		code = grpcCodes[e.Class.Code()]
	} else if c, ok := grpcCodes[e.Code]; ok {
		code = c
	}
	st := status.New(code, err.Error()) // with what wraps e, if anything does
	if reason := mcpdv1.ErrorReason(mcpdv1.ErrorReason_value[string(e.Class)]); reason != mcpdv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		if withInfo, err := st.WithDetails(mcpdv1.NewErrorInfo(reason, e.Metadata)); err == nil {
			st = withInfo
		}
	}
	return st.Err()
}

// statusUnary is the gRPC door of a unary call's errors: the service's
// (and the domain's) are said as statuses (toStatus), marked as mcpd's
// own (daemonTrailer). It comes first, so that the other interceptors'
// refusals (the request memory budget's) are said and marked so too.
func statusUnary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		_ = grpc.SetTrailer(ctx, daemonTrailer)
		return nil, toStatus(err)
	}
	return resp, nil
}

// statusStream is statusUnary for streaming calls.
func statusStream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	err := handler(srv, ss)
	if err != nil {
		ss.SetTrailer(daemonTrailer)
	}
	return toStatus(err)
}
