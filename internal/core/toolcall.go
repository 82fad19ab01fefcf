package core

import (
	"context"
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// methodToolsCall is the MCP method of a tool call.
const methodToolsCall = "tools/call"

// toolCall is a validated tools/call: the session request, the
// supervisor's options and the profile's view of the server (nil: none),
// or hidden, the answer when the profile hides the tool.
type toolCall struct {
	req    *session.Request
	copts  supervisor.CallOptions
	rs     *profile.Server
	hidden *session.RPCError
}

// toolCallParts are the parts of a tools/call, whichever door it came
// by: the tool's name, its arguments, the app's _meta and the answers to
// an input_required result. Absent members are empty.
type toolCallParts struct {
	server       string
	name         string
	args         json.RawMessage
	meta         json.RawMessage
	inputs       json.RawMessage
	requestState string
	// params, when set, are the call's params as a host wrote them
	// (compact JSON), passed to the server as they are once their parts
	// passed; when nil, the params are built from the parts.
	params json.RawMessage
	// fields names the parts in errors, as the door names them.
	fields *toolCallFields
}

// toolCallFields name a tools/call's parts in errors.
type toolCallFields struct{ args, meta, inputs string }

// The parts' names in a gRPC CallToolRequest and in a tools/call's params.
var (
	grpcToolFields = &toolCallFields{args: "arguments_json", meta: "meta_json", inputs: "input_responses_json"}
	mcpToolFields  = &toolCallFields{args: "params.arguments", meta: "params._meta", inputs: "params.inputResponses"}
)

// hostToolCall is a tools/call's params (a valid, compact JSON object) as
// the tool call entry takes them; a member that is null is absent, as an
// empty field of CallToolRequest is. The parts are views of params, not
// copies: the arguments may be tens of MiB.
func hostToolCall(server string, params json.RawMessage) (toolCallParts, error) {
	var name, args, meta, inputs, state json.RawMessage
	plain := jsonrpc.ScanMembers(params, func(key, value, _ []byte) {
		switch string(key) { // the last of a repeated member wins, as in json.Unmarshal
		case "name":
			name = value
		case "arguments":
			args = value
		case "_meta":
			meta = value
		case "inputResponses":
			inputs = value
		case "requestState":
			state = value
		}
	})
	if !plain {
		// A key with escapes, which json.Unmarshal matches by its
		// unescaped text: decode (copying) to find the parts.
		var p struct {
			Name           json.RawMessage `json:"name"`
			Arguments      json.RawMessage `json:"arguments"`
			Meta           json.RawMessage `json:"_meta"`
			InputResponses json.RawMessage `json:"inputResponses"`
			RequestState   json.RawMessage `json:"requestState"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return toolCallParts{}, codeError(service.InvalidArgument, "invalid params: %v", err)
		}
		name, args, meta, inputs, state = p.Name, p.Arguments, p.Meta, p.InputResponses, p.RequestState
	}
	out := toolCallParts{server: server, params: params, fields: mcpToolFields,
		args: nonNull(args), meta: nonNull(meta), inputs: nonNull(inputs)}
	if err := jsonString("params.name", name, &out.name); err != nil {
		return toolCallParts{}, err
	}
	if err := jsonString("params.requestState", state, &out.requestState); err != nil {
		return toolCallParts{}, err
	}
	return out, nil
}

// nonNull is raw, or nil when it is JSON null.
func nonNull(raw json.RawMessage) json.RawMessage {
	if string(raw) == "null" {
		return nil
	}
	return raw
}

// jsonString decodes raw (absent or null: "") into dst, refusing a value
// that is no string.
func jsonString(field string, raw json.RawMessage, dst *string) error {
	if raw = nonNull(raw); raw == nil {
		return nil
	}
	if err := json.Unmarshal(raw, dst); err != nil {
		return codeError(service.InvalidArgument, "invalid %s: must be a string", field)
	}
	return nil
}

// prepareToolCall is the one entry of a tool call, an app's (CallTool,
// CallToolUnary) or a host's (a tools/call sent through sendRequest): it
// validates the call's parts, its options and the call's profile (the
// gate, and whether it hides the tool) once, at the edge, and builds the
// session's request. unary refuses a progress token (nothing could carry
// the progress back).
func (s *Service) prepareToolCall(ctx context.Context, p toolCallParts, o service.Options, unary bool) (toolCall, error) {
	if p.server == "" {
		return toolCall{}, codeError(service.InvalidArgument, "server name required")
	}
	if p.name == "" {
		return toolCall{}, codeError(service.InvalidArgument, "tool name required")
	}
	args, err := JSONObject(p.fields.args, p.args)
	if err != nil {
		return toolCall{}, err
	}
	meta, err := metaObjectBytes(p.fields.meta, p.meta)
	if err != nil {
		return toolCall{}, err
	}
	if unary && hasProgressToken(meta) {
		return toolCall{}, codeError(service.InvalidArgument,
			"invalid %s: CallToolUnary delivers no progress, so it takes no progressToken (use CallTool)", p.fields.meta)
	}
	inputs, err := JSONObject(p.fields.inputs, p.inputs)
	if err != nil {
		return toolCall{}, err
	}
	base, copts, err := s.settings(ctx, o)
	if err != nil {
		return toolCall{}, err
	}
	rs, err := s.profileGate(ctx, p.server)
	if err != nil {
		return toolCall{}, err
	}
	if rs != nil {
		if hidden := hiddenName(&rs.Tools, "tool", p.name); hidden != nil {
			return toolCall{hidden: hidden}, nil
		}
	}
	base.Method = methodToolsCall
	if p.params != nil {
		base.Params = p.params
		return toolCall{req: base, copts: copts, rs: rs}, nil
	}
	// The arguments, which may be tens of MiB, go to the session as they
	// are (a view of the request's arguments_json), beside the other
	// params rather than copied into them.
	params, err := toolCallParams(meta, p.name, nil, inputs, p.requestState)
	if err != nil {
		return toolCall{}, codeError(service.Internal, "encode tools/call params: %v", err)
	}
	base.Params = params
	base.Arguments = args
	base.Validated = true // built from validated, compact parts
	return toolCall{req: base, copts: copts, rs: rs}, nil
}

// sendToolCall makes a host's tools/call (params, a compact JSON object)
// through the tool call entry an app's CallTool takes.
func (s *Service) sendToolCall(ctx context.Context, server string, params json.RawMessage, o service.Options, emit func(service.Event) error) (Answer, error) {
	p, err := hostToolCall(server, params)
	if err != nil {
		return Answer{}, err
	}
	tc, err := s.prepareToolCall(ctx, p, o, false)
	if err != nil {
		return Answer{}, err
	}
	if tc.hidden != nil {
		return Answer{Hidden: tc.hidden}, nil
	}
	return s.callRelayed(ctx, server, tc.req, tc.copts, tc.rs, emit)
}

// ToolCall is a tools/call in parts, as the gRPC door's CallToolRequest
// carries it: its JSON parts (arguments, _meta, the answers to an
// input_required result) are its text, empty when absent, and are passed
// on as views, not copies. Errors name them as CallToolRequest does.
type ToolCall struct {
	Server, Tool                    string
	Arguments, Meta, InputResponses []byte
	RequestState                    string
}

// CallTool calls a tool through the one entry of a tool call, as a
// host's tools/call does, passing the call's progress notifications and
// log messages to emit (never concurrently) before it returns.
func (s *Service) CallTool(ctx context.Context, t ToolCall, o service.Options, emit func(service.Event) error) (Answer, error) {
	tc, err := s.prepareToolCall(ctx, t.parts(), o, false)
	if err != nil || tc.hidden != nil {
		return Answer{Hidden: tc.hidden}, err
	}
	return s.callRelayed(ctx, t.Server, tc.req, tc.copts, tc.rs, emit)
}

// CallToolUnary is CallTool for a caller that takes no progress or log
// messages: a progress token is refused, as nothing could carry the
// progress back.
func (s *Service) CallToolUnary(ctx context.Context, t ToolCall, o service.Options) (Answer, error) {
	tc, err := s.prepareToolCall(ctx, t.parts(), o, true)
	if err != nil || tc.hidden != nil {
		return Answer{Hidden: tc.hidden}, err
	}
	return s.answer(ctx, t.Server, tc.req, tc.copts)
}

// parts is t as the tool call entry takes it.
func (t ToolCall) parts() toolCallParts {
	return toolCallParts{
		server: t.Server, name: t.Tool, args: t.Arguments, meta: t.Meta,
		inputs: t.InputResponses, requestState: t.RequestState, fields: grpcToolFields,
	}
}
