package api

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// pinBackend is the part of the supervisor that keeps pinned tool
// definitions (internal/supervisor/pin.go); a backend without it answers
// the pin RPCs UNIMPLEMENTED.
type pinBackend interface {
	ToolChanges(ctx context.Context, server string, base *session.Request, opts supervisor.CallOptions) (supervisor.ToolChanges, error)
	ApproveTools(ctx context.Context, server string, tools []string, base *session.Request, opts supervisor.CallOptions) ([]string, error)
	PinsDir() string
}

var _ pinBackend = (*supervisor.Supervisor)(nil)

func (s *Server) pins() (pinBackend, error) {
	pb, ok := s.sup.(pinBackend)
	if !ok {
		return nil, codeError(service.Unimplemented, "tool pinning is not available")
	}
	return pb, nil
}

// pinCall is what both pinning calls need: a server name, the pinning
// backend and the settings of the tools/list they make.
func (s *Server) pinCall(ctx context.Context, server string, o service.Options) (pinBackend, *session.Request, supervisor.CallOptions, error) {
	if server == "" {
		return nil, nil, supervisor.CallOptions{}, codeError(service.InvalidArgument, "server name required")
	}
	pb, err := s.pins()
	if err != nil {
		return nil, nil, supervisor.CallOptions{}, err
	}
	base, copts, err := s.settings(ctx, o)
	return pb, base, copts, err
}

// GetToolChanges reports how a server's tools differ from their pinned
// definitions.
func (s *Server) GetToolChanges(ctx context.Context, req *mcpdv1.GetToolChangesRequest) (*mcpdv1.GetToolChangesResponse, error) {
	o, err := optionsOf(req.GetOptions())
	if err != nil {
		return nil, err
	}
	tc, err := s.toolChanges(ctx, req.GetServer(), o)
	if err != nil {
		return nil, toError(err)
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

// toolChanges are how server's tools differ from their pinned
// definitions, every door's way.
func (s *Server) toolChanges(ctx context.Context, server string, o service.Options) (service.ToolChanges, error) {
	pb, base, copts, err := s.pinCall(ctx, server, o)
	if err != nil {
		return service.ToolChanges{}, err
	}
	tc, err := pb.ToolChanges(ctx, server, base, copts)
	if err != nil {
		return service.ToolChanges{}, toError(err)
	}
	out := service.ToolChanges{Server: server, PinMode: string(tc.Mode), PinsDir: pb.PinsDir()}
	for _, c := range tc.Changes {
		out.Changes = append(out.Changes, service.ToolChange{
			Tool: c.Tool, Kind: string(c.Kind), Members: c.Members,
			Pinned: c.Pinned.Text, Current: c.Current.Text, PinnedDigest: c.Pinned.Digest, CurrentDigest: c.Current.Digest,
			Variant: c.Variant.Key, Capabilities: c.Variant.Capabilities,
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
	approved, err := s.approveTools(ctx, req.GetServer(), req.GetTools(), o)
	if err != nil {
		return nil, toError(err)
	}
	return &mcpdv1.ApproveToolsResponse{Approved: approved}, nil
}

// approveTools accepts the current definitions of server's changed tools
// (none named: every one), every door's way, and returns those accepted.
func (s *Server) approveTools(ctx context.Context, server string, tools []string, o service.Options) ([]string, error) {
	pb, base, copts, err := s.pinCall(ctx, server, o)
	if err != nil {
		return nil, err
	}
	approved, err := pb.ApproveTools(ctx, server, tools, base, copts)
	if err != nil {
		return nil, toError(err)
	}
	return approved, nil
}
