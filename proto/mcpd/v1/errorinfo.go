package mcpdv1

import (
	"errors"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/status"
)

// ErrorDomain is the domain of the google.rpc.ErrorInfo that classes
// mcpd's failures (ErrorReason).
const ErrorDomain = "mcpd.dev"

// Keys of an ErrorInfo's metadata (see ErrorReason).
const (
	// ErrorServer is the server the failure is about.
	ErrorServer = "server"
	// ErrorTool is the tool a call named.
	ErrorTool = "tool"
	// ErrorProfile is the profile a call was made under.
	ErrorProfile = "profile"
	// ErrorBound is which of mcpd's bounds ran out: BoundRequestTimeout
	// or BoundCallTimeout.
	ErrorBound = "bound"
	// ErrorAfter is the bound's length, as a Go duration ("30s").
	ErrorAfter = "after"
	// ErrorChange is why a tool is withheld: "new" or "changed".
	ErrorChange = "change"
)

// Values of ErrorBound.
const (
	// BoundRequestTimeout is the server's requestTimeout.
	BoundRequestTimeout = "requestTimeout"
	// BoundCallTimeout is the call's own options.timeout_ms.
	BoundCallTimeout = "timeout"
)

// NewErrorInfo is the ErrorInfo of reason with metadata md, for a status's
// details.
func NewErrorInfo(reason ErrorReason, md map[string]string) *errdetails.ErrorInfo {
	return &errdetails.ErrorInfo{Reason: reason.String(), Domain: ErrorDomain, Metadata: md}
}

// ReasonOf is the class of err, a gRPC status error from mcpd, and the
// metadata that comes with it: ERROR_REASON_UNSPECIFIED (and nil) when
// err carries no ErrorInfo of mcpd's, as gRPC's own errors and mcpd's
// unclassed ones do.
func ReasonOf(err error) (ErrorReason, map[string]string) {
	var se interface{ GRPCStatus() *status.Status }
	if err == nil || !errors.As(err, &se) {
		return ErrorReason_ERROR_REASON_UNSPECIFIED, nil
	}
	for _, d := range se.GRPCStatus().Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != ErrorDomain {
			continue
		}
		if r, ok := ErrorReason_value[info.GetReason()]; ok {
			return ErrorReason(r), info.GetMetadata()
		}
	}
	return ErrorReason_ERROR_REASON_UNSPECIFIED, nil
}
