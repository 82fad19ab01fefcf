package bridge

import (
	"context"
	"encoding/json"

	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// A tool whose definition changed since it was approved is withheld
// under pin "enforce": mcpd refuses its calls with FAILED_PRECONDITION and
// a message naming the change and the commands that review and approve
// it. A host gets that refusal as the tool's own failure, a tools/call
// result with isError true and the message as its text, rather than a
// JSON-RPC error: the spec reports a tool that cannot do its work in the
// result, where the model and the user see why and what to run, and a
// host may take a JSON-RPC error for a broken connection or a bug of its
// own. (The tool is not listed meanwhile, so a host that lists again does
// not offer it.)

// callFailed is the host's answer to request r whose call of mcpd failed
// with err: a withheld tool's refusal as an isError result, else the
// JSON-RPC error of err.
func (b *bridge) callFailed(ctx context.Context, r *hostReq, server, method string, err error) (json.RawMessage, *jsonrpc.Error) {
	if res, ok := withheldResult(method, err); ok && ctx.Err() == nil {
		if r.modern {
			res = withResultType(res)
		}
		return res, nil
	}
	return nil, b.rpcToMCP(ctx, err, server)
}

// withheldResult is the tools/call result for err when it refuses a
// withheld tool (its class is TOOL_WITHHELD).
func withheldResult(method string, err error) (json.RawMessage, bool) {
	if reason, _ := mcpdv1.ReasonOf(err); method != "tools/call" || reason != mcpdv1.ErrorReason_ERROR_REASON_TOOL_WITHHELD {
		return nil, false
	}
	st, _ := status.FromError(err)
	res, merr := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": "mcpd: " + st.Message()}},
		"isError": true,
	})
	if merr != nil {
		return nil, false
	}
	return res, true
}
