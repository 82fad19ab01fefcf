package api

import (
	"context"
	"errors"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// reasonCodes is the one mapping from the class of a failure (the reason
// of its ErrorInfo) to its gRPC code.
var reasonCodes = map[mcpdv1.ErrorReason]codes.Code{
	mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_SERVER:     codes.NotFound,
	mcpdv1.ErrorReason_ERROR_REASON_NOT_IN_PROFILE:     codes.NotFound,
	mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_PROFILE:    codes.NotFound,
	mcpdv1.ErrorReason_ERROR_REASON_TOOL_WITHHELD:      codes.FailedPrecondition,
	mcpdv1.ErrorReason_ERROR_REASON_TIMED_OUT:          codes.DeadlineExceeded,
	mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE: codes.Unavailable,
	mcpdv1.ErrorReason_ERROR_REASON_SHUTTING_DOWN:      codes.Unavailable,
	mcpdv1.ErrorReason_ERROR_REASON_LOGIN_REQUIRED:     codes.Unauthenticated,
	mcpdv1.ErrorReason_ERROR_REASON_NOT_REMOTE:         codes.FailedPrecondition,
	mcpdv1.ErrorReason_ERROR_REASON_INVALID_REQUEST:    codes.InvalidArgument,
	mcpdv1.ErrorReason_ERROR_REASON_INSTANCE_LIMIT:     codes.ResourceExhausted,
	mcpdv1.ErrorReason_ERROR_REASON_RESPONSE_TOO_LARGE: codes.ResourceExhausted,
}

// classStatus is the status error of class reason, with message msg and
// the ErrorInfo metadata md (nil for none); its code is reasonCodes'.
func classStatus(reason mcpdv1.ErrorReason, md map[string]string, msg string) error {
	code, ok := reasonCodes[reason]
	if !ok {
		code = codes.Internal
	}
	st := status.New(code, msg)
	if withInfo, err := st.WithDetails(mcpdv1.NewErrorInfo(reason, md)); err == nil {
		st = withInfo
	}
	return st.Err()
}

// toStatus is the one mapping from domain errors to gRPC status errors:
// an error of a class (classOf) carries it as an ErrorInfo, the others
// (context errors, mcpd's own bugs) only a code. The message is always
// err.Error(), so the supervisor's context (server name, last exit, last
// stderr lines) reaches the app.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	if reason, md := classOf(err); reason != mcpdv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		return classStatus(reason, md, err.Error())
	}
	code := codes.Internal
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// A deadline none of mcpd's bounds names (supervisor.TimeoutError
		// is classed).
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, supervisor.ErrAlreadyRunning):
		code = codes.FailedPrecondition
	}
	return status.Error(code, err.Error())
}

// classOf is the class of a domain error and its ErrorInfo metadata;
// ERROR_REASON_UNSPECIFIED for an error of no class.
//
// Most specific first: a chain can hold several sentinels. The
// supervisor's own verdicts come before context errors, because an
// unavailable server may carry an internal timeout as its cause ("start
// timed out: context deadline exceeded") and the app should see
// UNAVAILABLE (retryable later), not a deadline it did not set. When the
// app's own deadline or cancellation ends a call, gRPC reports that to
// the app whatever the handler returns.
func classOf(err error) (mcpdv1.ErrorReason, map[string]string) {
	md := map[string]string{}
	if s := supervisor.ServerOf(err); s != "" {
		md[mcpdv1.ErrorServer] = s
	}
	var reason mcpdv1.ErrorReason
	var withheld *pin.WithheldError
	var timeout *supervisor.TimeoutError
	switch {
	case errors.Is(err, oauth.ErrLoginRequired), errors.Is(err, supervisor.ErrLoginRequired):
		// A remote server needing `mcpdctl login`; the message says so.
		reason = mcpdv1.ErrorReason_ERROR_REASON_LOGIN_REQUIRED
		var le *oauth.LoginRequiredError
		if errors.As(err, &le) {
			md[mcpdv1.ErrorServer] = le.Server
		}
	case errors.Is(err, ErrNotRemote):
		reason = mcpdv1.ErrorReason_ERROR_REASON_NOT_REMOTE
	case errors.Is(err, supervisor.ErrUnknownServer):
		reason = mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_SERVER
	case errors.As(err, &withheld):
		// The tool exists but may not be called until its change is approved.
		reason = mcpdv1.ErrorReason_ERROR_REASON_TOOL_WITHHELD
		md[mcpdv1.ErrorServer], md[mcpdv1.ErrorTool] = withheld.Server, withheld.Change.Tool
		md[mcpdv1.ErrorChange] = "new"
		if withheld.Change.Kind == pin.KindChanged {
			md[mcpdv1.ErrorChange] = "changed"
		}
	case errors.Is(err, pin.ErrWithheld):
		reason = mcpdv1.ErrorReason_ERROR_REASON_TOOL_WITHHELD
	case errors.Is(err, supervisor.ErrInvalid), errors.Is(err, session.ErrInvalidRequest):
		reason = mcpdv1.ErrorReason_ERROR_REASON_INVALID_REQUEST
	case errors.Is(err, supervisor.ErrInstanceLimit):
		// A shared server's maxInstances: another app must wait.
		reason = mcpdv1.ErrorReason_ERROR_REASON_INSTANCE_LIMIT
	case errors.Is(err, session.ErrResponseTooLarge), errors.Is(err, remote.ErrResponseTooLarge):
		// RESOURCE_EXHAUSTED: what gRPC itself answers for a message over
		// its size limit.
		reason = mcpdv1.ErrorReason_ERROR_REASON_RESPONSE_TOO_LARGE
	case errors.Is(err, supervisor.ErrShuttingDown):
		reason = mcpdv1.ErrorReason_ERROR_REASON_SHUTTING_DOWN
	case errors.Is(err, supervisor.ErrUnavailable):
		reason = mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE
	case errors.As(err, &timeout):
		reason = mcpdv1.ErrorReason_ERROR_REASON_TIMED_OUT
		md[mcpdv1.ErrorBound], md[mcpdv1.ErrorAfter] = timeout.Bound, timeout.After.String()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// No class: see toStatus.
	case errors.Is(err, session.ErrClosed),
		errors.Is(err, session.ErrExitedAfterProbe),
		errors.Is(err, session.ErrHandshake),
		errors.Is(err, transport.ErrClosed),
		errors.Is(err, transport.ErrCommandNotFound),
		errors.Is(err, transport.ErrCannotStart):
		reason = mcpdv1.ErrorReason_ERROR_REASON_SERVER_UNAVAILABLE
	}
	if len(md) == 0 {
		md = nil
	}
	return reason, md
}
