package api

import (
	"context"

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
	a, err := s.svc.CallToolUnary(ctx, toolCallOf(req), o)
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
// progress notifications and then the response.
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
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	a, err := s.svc.GetPrompt(ctx, core.PromptGet{Server: req.GetServer(), Name: req.GetName(),
		Arguments: stringBytes(req.GetArgumentsJson()), InputResponses: stringBytes(req.GetInputResponsesJson()),
		RequestState: req.GetRequestState(), Options: o})
	if err != nil {
		return nil, err
	}
	return answerToProto(req.GetServer(), a), nil
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
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	a, err := s.svc.Complete(ctx, req.GetServer(), stringBytes(req.GetParamsJson()), o)
	if err != nil {
		return nil, err
	}
	return answerToProto(req.GetServer(), a), nil
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
