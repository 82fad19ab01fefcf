package api

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"

	"github.com/mcpd-dev/mcpd/internal/apiconv"
	"github.com/mcpd-dev/mcpd/internal/core"
)

// ListTools lists the tools of one server, or of every enabled server.
func (s *Server) ListTools(ctx context.Context, req *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), core.MethodToolsList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListToolsResponse{Servers: lists}, nil
}

// ListPrompts lists the prompts of one server, or of every enabled server.
func (s *Server) ListPrompts(ctx context.Context, req *mcpdv1.ListPromptsRequest) (*mcpdv1.ListPromptsResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), core.MethodPromptsList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListPromptsResponse{Servers: lists}, nil
}

// ListResources lists the resources of one server, or of every enabled server.
func (s *Server) ListResources(ctx context.Context, req *mcpdv1.ListResourcesRequest) (*mcpdv1.ListResourcesResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), core.MethodResourcesList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListResourcesResponse{Servers: lists}, nil
}

// ListResourceTemplates lists the resource templates of one server, or of
// every enabled server.
func (s *Server) ListResourceTemplates(ctx context.Context, req *mcpdv1.ListResourceTemplatesRequest) (*mcpdv1.ListResourceTemplatesResponse, error) {
	lists, err := s.listProto(ctx, req.GetServer(), core.MethodResourceTemplatesList, req.GetOptions())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.ListResourceTemplatesResponse{Servers: lists}, nil
}

// listProto is list for a gRPC app.
func (s *Server) listProto(ctx context.Context, server, method string, opts *mcpdv1.CallOptions) ([]*mcpdv1.ServerList, error) {
	o, err := optionsOf(opts)
	if err != nil {
		return nil, err
	}
	lists, err := s.svc.List(ctx, server, method, o)
	if err != nil {
		return nil, err
	}
	out := make([]*mcpdv1.ServerList, len(lists))
	for i, l := range lists {
		e := &mcpdv1.ServerList{Server: l.Server, ItemsJson: resultString(l.Items), Unavailable: l.Unavailable}
		if l.Error != nil {
			e.Error = apiconv.ErrorToProto(l.Error)
		}
		if l.Unavailable == "" {
			e.Cache = apiconv.SourceToProto(l.Cache)
		}
		out[i] = e
	}
	return out, nil
}
