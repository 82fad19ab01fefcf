package api

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"google.golang.org/grpc"
)

// ReloadConfig re-reads and applies the config file.
func (s *Server) ReloadConfig(ctx context.Context, _ *mcpdv1.ReloadConfigRequest) (*mcpdv1.ReloadConfigResponse, error) {
	ops := s.svc.ConfigOps()
	if ops.Reload == nil {
		return nil, service.Errorf(service.Unimplemented, "this mcpd cannot reload its config")
	}
	out := ops.Reload(ctx)
	resp := &mcpdv1.ReloadConfigResponse{
		ConfigPath: out.Path,
		Applied:    out.Err == nil,
		Problems:   problemsToProto(out.Problems),
		Diff:       diffToProto(out.Diff, out.Profiles),
	}
	if out.Err != nil {
		resp.Error = out.Err.Error()
	}
	return resp, nil
}

// CheckConfig validates a config and reports what a reload would change.
func (s *Server) CheckConfig(ctx context.Context, req *mcpdv1.CheckConfigRequest) (*mcpdv1.CheckConfigResponse, error) {
	ops := s.svc.ConfigOps()
	if ops.Check == nil {
		return nil, service.Errorf(service.Unimplemented, "this mcpd cannot check a config")
	}
	var content []byte
	if len(req.GetContent()) > 0 {
		content = req.GetContent()
	}
	out := ops.Check(ctx, req.GetPath(), content)
	resp := &mcpdv1.CheckConfigResponse{
		ConfigPath: out.Path,
		Valid:      out.Err == nil,
		Problems:   problemsToProto(out.Problems),
	}
	if out.Err != nil {
		resp.Error = out.Err.Error()
	}
	if out.Err == nil || out.Diff.Changed() || len(out.Diff.Unchanged) > 0 {
		// With problems in single servers, the diff says what else it holds.
		resp.Diff = diffToProto(out.Diff, out.Profiles)
	}
	return resp, nil
}

// FollowLogs streams recent lines, then new ones until the app cancels.
func (s *Server) FollowLogs(req *mcpdv1.FollowLogsRequest, stream grpc.ServerStreamingServer[mcpdv1.FollowLogsResponse]) error {
	f := service.LogFollow{Server: req.GetName(), Lines: int(req.GetLines())}
	return s.svc.FollowLogs(stream.Context(), f, nil, func(l service.LogLine) error {
		return stream.Send(&mcpdv1.FollowLogsResponse{Line: lineToProto(l)})
	})
}

// lineToProto is l as mcpd.v1 sends it.
func lineToProto(l service.LogLine) *mcpdv1.LogLine {
	return &mcpdv1.LogLine{TimeUnixMs: l.Time.UnixMilli(), Text: l.Text, Truncated: l.Truncated, Pid: int64(l.Pid)}
}

func problemsToProto(ps []core.ConfigProblem) []*mcpdv1.ConfigProblem {
	out := make([]*mcpdv1.ConfigProblem, 0, len(ps))
	for _, p := range ps {
		out = append(out, &mcpdv1.ConfigProblem{
			Path: p.Path, Line: int32(p.Line), Column: int32(p.Column),
			Server: p.Server, Key: p.Key, Message: p.Message,
		})
	}
	return out
}

func diffToProto(d supervisor.ApplyResult, p core.ProfileChanges) *mcpdv1.ConfigDiff {
	return &mcpdv1.ConfigDiff{Added: d.Added, Removed: d.Removed, Restarted: d.Restarted, Updated: d.Updated, Unchanged: d.Unchanged,
		ProfilesAdded: p.Added, ProfilesRemoved: p.Removed, ProfilesChanged: p.Changed}
}
