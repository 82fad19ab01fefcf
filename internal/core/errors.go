package core

import (
	"context"
	"errors"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// ToError is the one mapping from domain errors to the service's errors
// (service.Error), which the in-process doors (App) return and the
// gRPC door says as a status (toStatus): an error of a class (classOf)
// carries it and its metadata, the others (context errors, mcpd's own
// bugs) only a code. The message is always err.Error(), so the
// supervisor's context (server name, last exit, last stderr lines)
// reaches the app; the domain error is kept as its cause. A service error
// is returned as it is. A door's own send errors (a gRPC stream's Send)
// never reach it: an operation whose send fails ends with nil.
func ToError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*service.Error](err); ok {
		return err
	}
	if class, md := classOf(err); class != "" {
		e := service.NewError(class, md, err.Error())
		e.Err = err
		return e
	}
	code := service.Internal
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// A deadline none of mcpd's bounds names (supervisor.TimeoutError
		// is classed).
		code = service.DeadlineExceeded
	case errors.Is(err, context.Canceled):
		code = service.Canceled
	case errors.Is(err, supervisor.ErrAlreadyRunning):
		code = service.FailedPrecondition
	}
	return &service.Error{Code: code, Message: err.Error(), Err: err}
}

// classError is the service error of class c, with message msg and
// metadata md (nil for none).
func classError(c service.Class, md map[string]string, msg string) error {
	return service.NewError(c, md, msg)
}

// codeError is a service error of no class, of code, with a formatted
// message: a check of the request by the API.
func codeError(code service.Code, format string, args ...any) error {
	return service.Errorf(code, format, args...)
}

// classOf is the class of a domain error and its metadata; "" for an
// error of no class.
//
// Most specific first: a chain can hold several sentinels. The
// supervisor's own verdicts come before context errors, because an
// unavailable server may carry an internal timeout as its cause ("start
// timed out: context deadline exceeded") and the app should see
// UNAVAILABLE (retryable later), not a deadline it did not set. When the
// app's own deadline or cancellation ends a call, gRPC reports that to
// the app whatever the handler returns.
func classOf(err error) (service.Class, map[string]string) {
	md := map[string]string{}
	if s := supervisor.ServerOf(err); s != "" {
		md[service.MetaServer] = s
	}
	var class service.Class
	var withheld *pin.WithheldError
	var timeout *supervisor.TimeoutError
	switch {
	case errors.Is(err, oauth.ErrLoginRequired), errors.Is(err, supervisor.ErrLoginRequired):
		// A remote server needing `mcpdctl login`; the message says so.
		class = service.LoginRequired
		var le *oauth.LoginRequiredError
		if errors.As(err, &le) {
			md[service.MetaServer] = le.Server
		}
	case errors.Is(err, ErrNotRemote):
		class = service.NotRemote
	case errors.Is(err, supervisor.ErrUnknownServer):
		class = service.UnknownServer
	case errors.As(err, &withheld):
		// The tool exists but may not be called until its change is approved.
		class = service.ToolWithheld
		md[service.MetaServer], md[service.MetaTool] = withheld.Server, withheld.Change.Tool
		md[service.MetaChange] = "new"
		if withheld.Change.Kind == pin.KindChanged {
			md[service.MetaChange] = "changed"
		}
	case errors.Is(err, pin.ErrWithheld):
		class = service.ToolWithheld
	case errors.Is(err, supervisor.ErrInvalid), errors.Is(err, session.ErrInvalidRequest):
		class = service.InvalidRequest
	case errors.Is(err, supervisor.ErrInstanceLimit):
		// A shared server's maxInstances: another app must wait.
		class = service.InstanceLimit
	case errors.Is(err, session.ErrResponseTooLarge), errors.Is(err, remote.ErrResponseTooLarge):
		// RESOURCE_EXHAUSTED: what gRPC itself answers for a message over
		// its size limit.
		class = service.ResponseTooLarge
	case errors.Is(err, supervisor.ErrShuttingDown):
		class = service.ShuttingDown
	case errors.Is(err, supervisor.ErrUnavailable):
		class = service.ServerUnavailable
	case errors.As(err, &timeout):
		class = service.TimedOut
		md[service.MetaBound], md[service.MetaAfter] = timeout.Bound, timeout.After.String()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		// No class: see toStatus.
	case errors.Is(err, session.ErrClosed),
		errors.Is(err, session.ErrExitedAfterProbe),
		errors.Is(err, session.ErrHandshake),
		errors.Is(err, transport.ErrClosed),
		errors.Is(err, transport.ErrCommandNotFound),
		errors.Is(err, transport.ErrCannotStart):
		class = service.ServerUnavailable
	}
	if len(md) == 0 {
		md = nil
	}
	return class, md
}
