package api

import (
	"context"

	"github.com/mcpd-dev/mcpd/internal/core"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// GetStatus reports the daemon, every configured server and the connected apps.
func (s *Server) GetStatus(ctx context.Context, _ *mcpdv1.GetStatusRequest) (*mcpdv1.GetStatusResponse, error) {
	core.IdentifyFromContext(ctx)
	st, apps := s.svc.Status()
	resp := statusToProto(st)
	for _, a := range apps {
		resp.Apps = append(resp.Apps, &mcpdv1.AppStatus{
			Name:              a.Name,
			Version:           a.Version,
			Pid:               int64(a.Pid),
			ConnectedAtUnixMs: a.ConnectedAt.UnixMilli(),
			Transport:         a.Transport,
			Profile:           a.Profile,
		})
	}
	resp.Subscriptions = s.subscriptionStatus()
	return resp, nil
}

// ListServers lists the configured servers with their state.
// Under a profile only its servers are listed.
func (s *Server) ListServers(ctx context.Context, _ *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	list, err := s.svc.ListServers(ctx)
	if err != nil {
		return nil, err
	}
	resp := &mcpdv1.ListServersResponse{}
	if p := list.Profile; p != nil {
		resp.Profile = &mcpdv1.ProfileInfo{Name: p.Name, Prefix: p.Prefix, Servers: p.Servers}
	}
	for _, st := range list.Servers {
		resp.Servers = append(resp.Servers, serverStatusToProto(st))
	}
	return resp, nil
}

// StartServer starts a server and waits until it is ready or failed.
func (s *Server) StartServer(ctx context.Context, req *mcpdv1.StartServerRequest) (*mcpdv1.StartServerResponse, error) {
	st, err := s.svc.StartServer(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.StartServerResponse{Server: serverStatusToProto(st)}, nil
}

// StopServer stops a server; it stays stopped until started again.
func (s *Server) StopServer(ctx context.Context, req *mcpdv1.StopServerRequest) (*mcpdv1.StopServerResponse, error) {
	st, err := s.svc.StopServer(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.StopServerResponse{Server: serverStatusToProto(st)}, nil
}

// RestartServer stops a server if it runs and starts it again.
func (s *Server) RestartServer(ctx context.Context, req *mcpdv1.RestartServerRequest) (*mcpdv1.RestartServerResponse, error) {
	st, err := s.svc.RestartServer(ctx, req.GetName())
	if err != nil {
		return nil, err
	}
	return &mcpdv1.RestartServerResponse{Server: serverStatusToProto(st)}, nil
}

// GetLogs returns the most recent stderr lines of a server.
func (s *Server) GetLogs(ctx context.Context, req *mcpdv1.GetLogsRequest) (*mcpdv1.GetLogsResponse, error) {
	lines, err := s.svc.Logs(req.GetName(), int(req.GetLines()))
	if err != nil {
		return nil, err
	}
	resp := &mcpdv1.GetLogsResponse{Lines: make([]*mcpdv1.LogLine, 0, len(lines))}
	for _, l := range lines {
		resp.Lines = append(resp.Lines, lineToProto(l))
	}
	return resp, nil
}
