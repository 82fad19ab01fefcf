package api

import (
	"context"
	"encoding/json"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
	"google.golang.org/grpc"
)

// CallTool calls a tool, streaming its progress notifications and then the
// response.
func (s *Server) CallTool(req *mcpdv1.CallToolRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return err
	}
	a, err := s.svc.CallTool(stream.Context(), toolCallOf(req), o, streamEmitter(stream))
	if err != nil {
		return err
	}
	return sendAnswer(stream, req.GetServer(), a)
}

// CallToolUnary calls a tool and returns its response, without progress
// or log events: the app asked for none, and a unary RPC is cheaper than
// a stream on both sides.
func (s *Server) CallToolUnary(ctx context.Context, req *mcpdv1.CallToolRequest) (*mcpdv1.McpResponse, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	a, err := s.svc.CallTool(ctx, toolCallOf(req), o, nil)
	if err != nil {
		return nil, err
	}
	return answerToProto(req.GetServer(), a), nil
}

// toolCallOf is an app's CallToolRequest as the service takes it: its
// JSON fields are views of req's text, not copies.
func toolCallOf(req *mcpdv1.CallToolRequest) core.ToolCall {
	return core.ToolCall{
		Server: req.GetServer(), Tool: req.GetTool(),
		Arguments: stringBytes(req.GetArgumentsJson()), Meta: stringBytes(req.GetMetaJson()),
		InputResponses: stringBytes(req.GetInputResponsesJson()), RequestState: req.GetRequestState(),
	}
}

// SendRequest sends any other MCP request to a server, streaming its
// progress notifications and then the response: the gRPC face of
// sendRequest.
func (s *Server) SendRequest(req *mcpdv1.SendRequestRequest, stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) error {
	r, err := requestOf(req)
	if err != nil {
		return err
	}
	a, err := s.svc.SendRequest(stream.Context(), r, streamEmitter(stream))
	if err != nil {
		return err
	}
	return sendAnswer(stream, req.GetServer(), a)
}

// requestOf is req as the service takes it: its params a view of req's,
// not a copy; options.timeout_ms is checked here.
func requestOf(req *mcpdv1.SendRequestRequest) (service.Request, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return service.Request{}, err
	}
	return service.Request{Server: req.GetServer(), Method: req.GetMethod(), Params: stringBytes(req.GetParamsJson()), Options: o}, nil
}

// GetPrompt gets one prompt.
func (s *Server) GetPrompt(ctx context.Context, req *mcpdv1.GetPromptRequest) (*mcpdv1.McpResponse, error) {
	if req.GetServer() == "" {
		return nil, service.Errorf(service.InvalidArgument, "server name required")
	}
	if req.GetName() == "" {
		return nil, service.Errorf(service.InvalidArgument, "prompt name required")
	}
	args, err := core.JSONObject("arguments_json", stringBytes(req.GetArgumentsJson()))
	if err != nil {
		return nil, err
	}
	if args != nil {
		// prompts/get params: "arguments?: {string: string}".
		var m map[string]string
		if err := json.Unmarshal(args, &m); err != nil {
			return nil, service.Errorf(service.InvalidArgument, "invalid arguments_json: values must be strings")
		}
	}
	inputResponses, err := core.JSONObject("input_responses_json", stringBytes(req.GetInputResponsesJson()))
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(struct {
		Name           string          `json:"name"`
		Arguments      json.RawMessage `json:"arguments,omitempty"`
		InputResponses json.RawMessage `json:"inputResponses,omitempty"`
		RequestState   string          `json:"requestState,omitempty"`
	}{req.GetName(), args, inputResponses, req.GetRequestState()})
	if err != nil {
		return nil, service.Errorf(service.Internal, "encode prompts/get params: %v", err)
	}
	return s.unaryCall(ctx, req.GetServer(), "prompts/get", params, req.GetOptions())
}

// ReadResource reads one resource.
func (s *Server) ReadResource(ctx context.Context, req *mcpdv1.ReadResourceRequest) (*mcpdv1.McpResponse, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	a, err := s.svc.Read(ctx, service.Read{Server: req.GetServer(), URI: req.GetUri(),
		InputResponses: stringBytes(req.GetInputResponsesJson()), RequestState: req.GetRequestState(), Options: o})
	if err != nil {
		return nil, err
	}
	return answerToProto(req.GetServer(), a), nil
}

// Complete asks a server for argument completions.
func (s *Server) Complete(ctx context.Context, req *mcpdv1.CompleteRequest) (*mcpdv1.McpResponse, error) {
	if req.GetServer() == "" {
		return nil, service.Errorf(service.InvalidArgument, "server name required")
	}
	params, err := core.JSONObject("params_json", stringBytes(req.GetParamsJson()))
	if err != nil {
		return nil, err
	}
	if params == nil {
		// completion/complete requires "ref" and "argument".
		return nil, service.Errorf(service.InvalidArgument, "params_json required")
	}
	return s.unaryCall(ctx, req.GetServer(), "completion/complete", params, req.GetOptions())
}

// unaryCall forwards one request of a gRPC app and waits for its
// response.
func (s *Server) unaryCall(ctx context.Context, server, method string, params json.RawMessage, opts *mcpdv1.CallOptions) (*mcpdv1.McpResponse, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	a, err := s.svc.Call(ctx, server, method, params, o)
	if err != nil {
		return nil, err
	}
	return answerToProto(server, a), nil
}

// streamEmitter sends a call's progress and log messages on a gRPC stream.
func streamEmitter(stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent]) func(service.Event) error {
	return func(p service.Event) error {
		ev := &mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_ProgressJson{ProgressJson: string(p.Params)}}
		if p.Kind == service.Message {
			ev.Event = &mcpdv1.CallToolEvent_MessageJson{MessageJson: string(p.Params)}
		}
		return stream.Send(ev)
	}
}

// sendAnswer sends a call's answer, its last event, on a gRPC stream.
func sendAnswer(stream grpc.ServerStreamingServer[mcpdv1.CallToolEvent], server string, a core.Answer) error {
	return stream.Send(&mcpdv1.CallToolEvent{Event: &mcpdv1.CallToolEvent_Response{Response: answerToProto(server, a)}})
}

// answerToProto is a's response to a call of server, as mcpd.v1 sends it.
func answerToProto(server string, a core.Answer) *mcpdv1.McpResponse {
	if a.Hidden != nil {
		return &mcpdv1.McpResponse{Server: server, Error: mcpErrorToProto(a.Hidden)}
	}
	return toMcpResponse(server, a.Response, a.Source, a.Duration)
}
