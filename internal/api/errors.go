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
)

// toStatus is the one mapping from domain errors to gRPC status errors. The
// message is always err.Error(), so the supervisor's context (server name,
// last exit, last stderr lines) reaches the app.
func toStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Internal
	// Most specific first: a chain can hold several sentinels. The
	// supervisor's own verdicts come before context errors, because an
	// unavailable server may carry an internal timeout as its cause ("start
	// timed out: context deadline exceeded") and the app should see
	// UNAVAILABLE (retryable later), not a deadline it did not set. When the
	// app's own deadline or cancellation ends a call, gRPC reports that to
	// the app whatever the handler returns.
	switch {
	case errors.Is(err, oauth.ErrLoginRequired):
		// A remote server needing `mcpdctl login`; the message says so.
		code = codes.Unauthenticated
	case errors.Is(err, ErrNotRemote):
		code = codes.FailedPrecondition
	case errors.Is(err, supervisor.ErrUnknownServer):
		code = codes.NotFound
	case errors.Is(err, pin.ErrWithheld):
		// The tool exists but may not be called until its change is approved.
		code = codes.FailedPrecondition
	case errors.Is(err, supervisor.ErrInvalid), errors.Is(err, session.ErrInvalidRequest):
		code = codes.InvalidArgument
	case errors.Is(err, supervisor.ErrInstanceLimit):
		// A shared server's maxInstances: another app must wait.
		code = codes.ResourceExhausted
	case errors.Is(err, session.ErrResponseTooLarge):
		// What gRPC itself answers for a message over its size limit.
		code = codes.ResourceExhausted
	case errors.Is(err, supervisor.ErrLoginRequired):
		code = codes.Unauthenticated
	case errors.Is(err, remote.ErrResponseTooLarge):
		code = codes.ResourceExhausted
	case errors.Is(err, supervisor.ErrUnavailable):
		code = codes.Unavailable
	case errors.Is(err, context.DeadlineExceeded):
		code = codes.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = codes.Canceled
	case errors.Is(err, supervisor.ErrAlreadyRunning):
		code = codes.FailedPrecondition
	case errors.Is(err, session.ErrClosed),
		errors.Is(err, session.ErrExitedAfterProbe),
		errors.Is(err, session.ErrHandshake),
		errors.Is(err, transport.ErrClosed),
		errors.Is(err, transport.ErrCommandNotFound),
		errors.Is(err, transport.ErrCannotStart):
		code = codes.Unavailable
	}
	return status.Error(code, err.Error())
}
