package bridge

import (
	"context"
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// A tool whose definition changed since it was approved is withheld
// under pin "enforce": mcpd refuses its calls with class TOOL_WITHHELD and
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
	if method != "tools/call" || service.ClassOf(err) != service.ToolWithheld {
		return nil, false
	}
	res, merr := json.Marshal(map[string]any{
		"content": []map[string]string{{"type": "text", "text": "mcpd: " + err.Error()}},
		"isError": true,
	})
	if merr != nil {
		return nil, false
	}
	return res, true
}
