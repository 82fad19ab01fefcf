package api

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/core"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// GetToolChanges reports how a server's tools differ from their pinned
// definitions.
func (s *Server) GetToolChanges(ctx context.Context, req *mcpdv1.GetToolChangesRequest) (*mcpdv1.GetToolChangesResponse, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	tc, err := s.svc.ToolChanges(ctx, req.GetServer(), o)
	if err != nil {
		return nil, core.ToError(err)
	}
	out := &mcpdv1.GetToolChangesResponse{Server: tc.Server, PinMode: tc.PinMode, PinsDir: tc.PinsDir}
	for _, c := range tc.Changes {
		out.Changes = append(out.Changes, &mcpdv1.ToolChange{
			Tool:             c.Tool,
			Kind:             c.Kind,
			Members:          c.Members,
			PinnedJson:       string(c.Pinned),
			CurrentJson:      string(c.Current),
			PinnedDigest:     c.PinnedDigest,
			CurrentDigest:    c.CurrentDigest,
			Variant:          c.Variant,
			CapabilitiesJson: string(c.Capabilities),
		})
	}
	return out, nil
}

// ApproveTools accepts the current definitions of a server's changed tools.
func (s *Server) ApproveTools(ctx context.Context, req *mcpdv1.ApproveToolsRequest) (*mcpdv1.ApproveToolsResponse, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	approved, err := s.svc.ApproveTools(ctx, req.GetServer(), req.GetTools(), o)
	if err != nil {
		return nil, core.ToError(err)
	}
	return &mcpdv1.ApproveToolsResponse{Approved: approved}, nil
}
