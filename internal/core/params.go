package core

import (
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// toolCallParams builds the params of tools/call: "name", "arguments?",
// plus modern "inputResponses?" and "requestState?" ("the exact string
// received (omit it if none was received)"), and the app's "_meta?". The
// raw members must be compact JSON objects (JSONObject's output) or nil.
// The bytes are those json.Marshal gives for the same struct, written
// without reflection: this runs on every call.
func toolCallParams(meta json.RawMessage, name string, args, inputResponses json.RawMessage, requestState string) ([]byte, error) {
	b := make([]byte, 0, 48+len(meta)+len(name)+len(args)+len(inputResponses)+len(requestState))
	b = append(b, '{')
	if len(meta) > 0 {
		b = append(b, `"_meta":`...)
		b = append(b, meta...)
		b = append(b, ',')
	}
	b = append(b, `"name":`...)
	b, err := jsonrpc.AppendString(b, name)
	if err != nil {
		return nil, err
	}
	if len(args) > 0 {
		b = append(b, `,"arguments":`...)
		b = append(b, args...)
	}
	if len(inputResponses) > 0 {
		b = append(b, `,"inputResponses":`...)
		b = append(b, inputResponses...)
	}
	if requestState != "" {
		b = append(b, `,"requestState":`...)
		if b, err = jsonrpc.AppendString(b, requestState); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}
