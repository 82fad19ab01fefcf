package apiclient

import (
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// serviceCodes is the one mapping from the gRPC code of a failed call of
// mcpd's API to the service's code (internal/api maps them back); a code
// mcpd never sends is service.Unknown.
var serviceCodes = map[codes.Code]service.Code{
	codes.Canceled:           service.Canceled,
	codes.InvalidArgument:    service.InvalidArgument,
	codes.DeadlineExceeded:   service.DeadlineExceeded,
	codes.NotFound:           service.NotFound,
	codes.PermissionDenied:   service.PermissionDenied,
	codes.ResourceExhausted:  service.ResourceExhausted,
	codes.FailedPrecondition: service.FailedPrecondition,
	codes.Aborted:            service.Aborted,
	codes.Unimplemented:      service.Unimplemented,
	codes.Internal:           service.Internal,
	codes.Unavailable:        service.Unavailable,
	codes.Unauthenticated:    service.Unauthenticated,
}

// ServiceError is err, a failed call of mcpd's gRPC API, as the service's
// error, as the daemon's in-process doors give it: its class and
// metadata from the status's ErrorInfo (mcpdv1.ReasonOf), its code from
// the status's code, its message the status's; the status is its cause.
// An error that is no status (the connection's own, "not running") and a
// service error are returned as they are; nil for nil.
func ServiceError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*service.Error](err); ok {
		return err
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	e := &service.Error{Code: serviceCodes[st.Code()], Message: st.Message(), Err: err}
	if reason, md := mcpdv1.ReasonOf(err); reason != mcpdv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		e.Class, e.Metadata = service.Class(reason.String()), md
	}
	return e
}
