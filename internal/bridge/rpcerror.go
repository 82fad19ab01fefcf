package bridge

import (
	"context"
	"errors"
	"strconv"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// classRPCCodes is the one mapping from the class of mcpd's failure
// (service.Class) to the JSON-RPC code the host sees; a class not listed
// is CodeInternalError. A failure of no class is mapped by its code
// (codeRPCCodes).
var classRPCCodes = map[service.Class]int64{
	service.UnknownServer:  jsonrpc.CodeInvalidParams,
	service.NotInProfile:   jsonrpc.CodeInvalidParams,
	service.UnknownProfile: jsonrpc.CodeInvalidParams,
	service.InvalidRequest: jsonrpc.CodeInvalidParams,
}

// codeRPCCodes maps the code of a failure without a class (a check of the
// request in mcpd's API) to its JSON-RPC code; a code not listed is
// CodeInternalError.
var codeRPCCodes = map[service.Code]int64{
	service.NotFound:        jsonrpc.CodeInvalidParams,
	service.InvalidArgument: jsonrpc.CodeInvalidParams,
}

// errorData is the data of the JSON-RPC error for a failure of a class:
// its class (the name of mcpd.v1's ErrorReason) and metadata.
type errorData struct {
	Reason   string            `json:"reason"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RPCError turns a failed call of mcpd's service for server (a
// service.Error, as every Backend gives it; an error of none is one of
// code Unknown) into the JSON-RPC error the host sees: its code from the
// failure's class (classRPCCodes), else from its code, and for a failure
// of a class, data saying it (errorData). down reports whether mcpd is
// unreachable, in which case an Unavailable call says notRunning's error;
// every Backend maps its errors with it.
func RPCError(ctx context.Context, err error, server string, down func() bool, notRunning func() error) *jsonrpc.Error {
	if ctx.Err() != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
	e := serviceError(err)
	code, ok := classRPCCodes[e.Class]
	if !ok {
		code, ok = codeRPCCodes[e.Code]
	}
	if !ok {
		code = jsonrpc.CodeInternalError
	}
	msg := e.Message
	switch {
	case e.Code == service.Unavailable && down():
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", notRunning().Error())
	case e.Code == service.Unavailable:
		msg = unavailableText(server, e)
	case e.Code == service.NotFound, e.Code == service.InvalidArgument:
	case e.Class == service.TimedOut:
		// It names the server and which of mcpd's bounds ran out.
	case e.Code == service.DeadlineExceeded:
		msg = "server " + strconv.Quote(server) + ": request timed out"
	default:
		msg = "mcpd: " + msg
	}
	if e.Class == "" {
		return jsonrpc.Errorf(code, "%s", msg)
	}
	return jsonrpc.WithData(code, msg, errorData{Reason: string(e.Class), Metadata: e.Metadata})
}

// serviceError is err as the service's error: one of code Unknown when it
// is none.
func serviceError(err error) *service.Error {
	if e, ok := errors.AsType[*service.Error](err); ok {
		return e
	}
	return &service.Error{Code: service.Unknown, Message: err.Error()}
}

// unavailableText says that server cannot serve, for e, naming it once:
// mcpd's errors about a server name it first (the metadata's server) and
// are said as they are, others after the server's name.
func unavailableText(server string, e *service.Error) string {
	if server == "" || e.Metadata[service.MetaServer] == server {
		return e.Message
	}
	return "server " + strconv.Quote(server) + " is unavailable: " + e.Message
}
