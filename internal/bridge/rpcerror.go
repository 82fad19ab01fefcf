package bridge

import (
	"context"
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// reasonRPCCodes is the one mapping from the class of mcpd's failure (the
// reason of its status's ErrorInfo) to the JSON-RPC code the host sees; a
// class not listed is CodeInternalError. A failure of no class is mapped
// by its gRPC code (codeRPCCodes).
var reasonRPCCodes = map[mcpdv1.ErrorReason]int64{
	mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_SERVER:  jsonrpc.CodeInvalidParams,
	mcpdv1.ErrorReason_ERROR_REASON_NOT_IN_PROFILE:  jsonrpc.CodeInvalidParams,
	mcpdv1.ErrorReason_ERROR_REASON_UNKNOWN_PROFILE: jsonrpc.CodeInvalidParams,
	mcpdv1.ErrorReason_ERROR_REASON_INVALID_REQUEST: jsonrpc.CodeInvalidParams,
}

// codeRPCCodes maps the gRPC code of a failure without a class (a check
// of the request in mcpd's API) to its JSON-RPC code; a code not listed
// is CodeInternalError.
var codeRPCCodes = map[codes.Code]int64{
	codes.NotFound:        jsonrpc.CodeInvalidParams,
	codes.InvalidArgument: jsonrpc.CodeInvalidParams,
}

// errorData is the data of the JSON-RPC error for a failure of a class:
// its reason and metadata, as mcpd's API gives them (mcpdv1.ReasonOf).
type errorData struct {
	Reason   string            `json:"reason"`
	Metadata map[string]string `json:"metadata,omitempty"`
}

// RPCError turns a failed call of mcpd's API for server (a gRPC status
// error) into the JSON-RPC error the host sees: its code from the
// failure's class (reasonRPCCodes), else from its gRPC code, and for a
// failure of a class, data saying it (errorData). down reports whether
// mcpd is unreachable, in which case an UNAVAILABLE call says
// notRunning's error; every Backend maps its errors with it.
func RPCError(ctx context.Context, err error, server string, down func() bool, notRunning func() error) *jsonrpc.Error {
	if ctx.Err() != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
	st, _ := status.FromError(err)
	reason, md := mcpdv1.ReasonOf(err)
	code, ok := reasonRPCCodes[reason]
	if !ok {
		code, ok = codeRPCCodes[st.Code()]
	}
	if !ok {
		code = jsonrpc.CodeInternalError
	}
	// mcpd's errors about a server name it first (the metadata's server):
	// the message is said as it is, else with the server's name.
	named := server == "" || md[mcpdv1.ErrorServer] == server
	msg := st.Message()
	switch {
	case st.Code() == codes.Unavailable && down():
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", notRunning().Error())
	case st.Code() == codes.Unavailable && !named:
		msg = "server " + strconv.Quote(server) + " is unavailable: " + msg
	case st.Code() == codes.Unavailable, st.Code() == codes.NotFound, st.Code() == codes.InvalidArgument:
	case reason == mcpdv1.ErrorReason_ERROR_REASON_TIMED_OUT:
		// It names the server and which of mcpd's bounds ran out.
	case st.Code() == codes.DeadlineExceeded:
		msg = "server " + strconv.Quote(server) + ": request timed out"
	default:
		msg = "mcpd: " + msg
	}
	if reason == mcpdv1.ErrorReason_ERROR_REASON_UNSPECIFIED {
		return jsonrpc.Errorf(code, "%s", msg)
	}
	return jsonrpc.WithData(code, msg, errorData{Reason: reason.String(), Metadata: md})
}
