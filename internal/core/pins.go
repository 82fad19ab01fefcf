package core

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
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

func (s *Service) pins() (pinBackend, error) {
	pb, ok := s.sup.(pinBackend)
	if !ok {
		return nil, codeError(service.Unimplemented, "tool pinning is not available")
	}
	return pb, nil
}

// pinCall is what both pinning calls need: a server name, the pinning
// backend and the settings of the tools/list they make.
func (s *Service) pinCall(ctx context.Context, server string, o service.Options) (pinBackend, *session.Request, supervisor.CallOptions, error) {
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

// ToolChanges are how server's tools differ from their pinned
// definitions, every door's way.
func (s *Service) ToolChanges(ctx context.Context, server string, o service.Options) (service.ToolChanges, error) {
	pb, base, copts, err := s.pinCall(ctx, server, o)
	if err != nil {
		return service.ToolChanges{}, err
	}
	tc, err := pb.ToolChanges(ctx, server, base, copts)
	if err != nil {
		return service.ToolChanges{}, ToError(err)
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

// ApproveTools accepts the current definitions of server's changed tools
// (none named: every one), every door's way, and returns those accepted.
func (s *Service) ApproveTools(ctx context.Context, server string, tools []string, o service.Options) ([]string, error) {
	pb, base, copts, err := s.pinCall(ctx, server, o)
	if err != nil {
		return nil, err
	}
	approved, err := pb.ApproveTools(ctx, server, tools, base, copts)
	if err != nil {
		return nil, ToError(err)
	}
	return approved, nil
}
