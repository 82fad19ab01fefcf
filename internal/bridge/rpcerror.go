package bridge

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// RPCError turns a failed call of mcpd's API for server (a gRPC status
// error) into the JSON-RPC error the host sees. down reports whether mcpd
// is unreachable, in which case an UNAVAILABLE call says notRunning's
// error; every Backend maps its errors with it.
func RPCError(ctx context.Context, err error, server string, down func() bool, notRunning func() error) *jsonrpc.Error {
	if ctx.Err() != nil {
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	}
	st, _ := status.FromError(err)
	switch st.Code() {
	case codes.Unavailable:
		if down() {
			return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", notRunning().Error())
		}
		if msg := st.Message(); server == "" || strings.HasPrefix(msg, "server "+strconv.Quote(server)) {
			return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", msg) // it names the server already
		}
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q is unavailable: %s", server, st.Message())
	case codes.NotFound, codes.InvalidArgument:
		return jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%s", st.Message())
	case codes.DeadlineExceeded:
		if msg := st.Message(); strings.Contains(msg, "timed out after") {
			return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", msg) // names the server and which timeout
		}
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q: request timed out", server)
	}
	return jsonrpc.Errorf(jsonrpc.CodeInternalError, "mcpd: %s", st.Message())
}
