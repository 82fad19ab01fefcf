package service

import (
	"context"
	"errors"
	"fmt"
)

// Class is the class of one of mcpd's own failures: what an app, a host
// or an operator may tell apart and act on. It is carried by an Error
// from the domain (internal/core classes the domain's errors) to every
// door: the gRPC API says it as the reason of an ErrorInfo (its value is
// the name of the mcpd.v1 ErrorReason), the bridge as the reason of its
// JSON-RPC error's data. Match failures by class, never by message.
type Class string

// Classes of failures, one per mcpd.v1 ErrorReason.
const (
	// UnknownServer: no server of that name is configured.
	UnknownServer Class = "ERROR_REASON_UNKNOWN_SERVER"
	// NotInProfile: the call's profile does not serve the server; the
	// message says "unknown server", as for one not configured.
	NotInProfile Class = "ERROR_REASON_NOT_IN_PROFILE"
	// UnknownProfile: the call names a profile the config lacks.
	UnknownProfile Class = "ERROR_REASON_UNKNOWN_PROFILE"
	// ToolWithheld: the tool is new or changed since it was approved
	// (tool pinning); approve it to call it.
	ToolWithheld Class = "ERROR_REASON_TOOL_WITHHELD"
	// TimedOut: the call ran out of one of mcpd's own bounds, named by
	// the metadata's MetaBound and MetaAfter.
	TimedOut Class = "ERROR_REASON_TIMED_OUT"
	// ServerUnavailable: the server cannot serve now (crash loop,
	// stopped, disabled, exited during the call, unreachable).
	ServerUnavailable Class = "ERROR_REASON_SERVER_UNAVAILABLE"
	// ShuttingDown: mcpd is stopping.
	ShuttingDown Class = "ERROR_REASON_SHUTTING_DOWN"
	// LoginRequired: a remote server needs "mcpdctl login".
	LoginRequired Class = "ERROR_REASON_LOGIN_REQUIRED"
	// NotRemote: login asked of a server that is not a remote one.
	NotRemote Class = "ERROR_REASON_NOT_REMOTE"
	// InvalidRequest: the request or its params are malformed.
	InvalidRequest Class = "ERROR_REASON_INVALID_REQUEST"
	// InstanceLimit: a shared server's maxInstances are all taken.
	InstanceLimit Class = "ERROR_REASON_INSTANCE_LIMIT"
	// ResponseTooLarge: the server's answer is over its size limit.
	ResponseTooLarge Class = "ERROR_REASON_RESPONSE_TOO_LARGE"
)

// classCodes is the one mapping from a class to its code.
var classCodes = map[Class]Code{
	UnknownServer:     NotFound,
	NotInProfile:      NotFound,
	UnknownProfile:    NotFound,
	ToolWithheld:      FailedPrecondition,
	TimedOut:          DeadlineExceeded,
	ServerUnavailable: Unavailable,
	ShuttingDown:      Unavailable,
	LoginRequired:     Unauthenticated,
	NotRemote:         FailedPrecondition,
	InvalidRequest:    InvalidArgument,
	InstanceLimit:     ResourceExhausted,
	ResponseTooLarge:  ResourceExhausted,
}

// Code is the code of a class: Internal for a class not known.
func (c Class) Code() Code {
	if code, ok := classCodes[c]; ok {
		return code
	}
	return Internal
}

// Keys of an Error's metadata: what the failure is about.
const (
	// MetaServer is the server the failure is about.
	MetaServer = "server"
	// MetaTool is the tool a call named.
	MetaTool = "tool"
	// MetaProfile is the profile a call was made under.
	MetaProfile = "profile"
	// MetaBound is which of mcpd's bounds ran out: BoundRequestTimeout or
	// BoundCallTimeout.
	MetaBound = "bound"
	// MetaAfter is the bound's length, as a Go duration ("30s").
	MetaAfter = "after"
	// MetaChange is why a tool is withheld: "new" or "changed".
	MetaChange = "change"
)

// Values of MetaBound.
const (
	// BoundRequestTimeout is the server's requestTimeout.
	BoundRequestTimeout = "requestTimeout"
	// BoundCallTimeout is the call's own timeout (Options.Timeout).
	BoundCallTimeout = "timeout"
)

// Code is what a door tells apart of a failure, with or without a class:
// a plain enum whose names are those of the gRPC codes it is said as.
type Code uint8

// Codes of failures. Unknown is the zero Code: a failure of none.
const (
	Unknown Code = iota
	Canceled
	InvalidArgument
	DeadlineExceeded
	NotFound
	PermissionDenied
	ResourceExhausted
	FailedPrecondition
	Aborted
	Unimplemented
	Internal
	Unavailable
	Unauthenticated
)

var codeNames = [...]string{
	Unknown:            "Unknown",
	Canceled:           "Canceled",
	InvalidArgument:    "InvalidArgument",
	DeadlineExceeded:   "DeadlineExceeded",
	NotFound:           "NotFound",
	PermissionDenied:   "PermissionDenied",
	ResourceExhausted:  "ResourceExhausted",
	FailedPrecondition: "FailedPrecondition",
	Aborted:            "Aborted",
	Unimplemented:      "Unimplemented",
	Internal:           "Internal",
	Unavailable:        "Unavailable",
	Unauthenticated:    "Unauthenticated",
}

// String is the code's name, as gRPC names its code ("NotFound").
func (c Code) String() string {
	if int(c) < len(codeNames) {
		return codeNames[c]
	}
	return fmt.Sprintf("Code(%d)", c)
}

// Error is a failure of the service as its doors see it: its class (""
// for none), its code, what it is about (Metadata, keys Meta*; nil for
// nothing) and its message, written for people. Err is the domain error
// it was made of, if any (Unwrap), for in-process callers that look
// further; doors say only the rest.
type Error struct {
	Class    Class
	Code     Code
	Metadata map[string]string
	Message  string
	Err      error
}

// Error is the message.
func (e *Error) Error() string { return e.Message }

// Unwrap is the domain error e was made of.
func (e *Error) Unwrap() error { return e.Err }

// NewError is the error of class c with metadata md (nil for none) and
// message msg; its code is the class's.
func NewError(c Class, md map[string]string, msg string) *Error {
	return &Error{Class: c, Code: c.Code(), Metadata: md, Message: msg}
}

// Errorf is an error of no class, of code, with a formatted message.
func Errorf(code Code, format string, args ...any) error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorOf is err as an Error: the one in its chain, else one of code
// Canceled or DeadlineExceeded for a context error, else of code
// Unknown; its message is err.Error(). Nil for nil.
func ErrorOf(err error) *Error {
	if err == nil {
		return nil
	}
	if e, ok := errors.AsType[*Error](err); ok {
		return e
	}
	code := Unknown
	switch {
	case errors.Is(err, context.Canceled):
		code = Canceled
	case errors.Is(err, context.DeadlineExceeded):
		code = DeadlineExceeded
	}
	return &Error{Code: code, Message: err.Error(), Err: err}
}

// ClassOf is the class of err: "" for an error of none.
func ClassOf(err error) Class {
	if e, ok := errors.AsType[*Error](err); ok {
		return e.Class
	}
	return ""
}

// CodeOf is the code of err (ErrorOf); Unknown for nil.
func CodeOf(err error) Code {
	if err == nil {
		return Unknown
	}
	return ErrorOf(err).Code
}
