package core

import (
	"time"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/version"
)

// daemonStatus is the daemon's status, what GetStatus reports but the
// apps and subscriptions, built once for every door: apps are the
// connected apps, whose use of the servers the sharing summary counts.
func (s *Service) daemonStatus(apps []ConnectedApp) service.Status {
	now := time.Now()
	s.mu.Lock()
	out := service.Status{
		Version:     version.Version,
		Pid:         s.pid,
		Uptime:      now.Sub(s.start),
		ConfigPath:  s.configPath,
		ConfigError: s.configError,
		SocketPath:  s.socketPath,
	}
	s.mu.Unlock()
	servers := s.sup.Status()
	out.Servers = s.serverStatuses(servers, now)
	out.Sharing = sharingOf(s.sharingStatus(apps, servers))
	out.Profiles = s.profileList()
	out.HTTP = s.httpStatus()
	if a := s.auditOptions(); a.Log != nil {
		out.AuditPath = a.Log.Path()
	}
	if f := s.secrets; f != nil {
		out.Secrets = f()
	}
	if f := s.oauthStore; f != nil {
		out.OAuthTokens = f()
	}
	return out
}

// serverStatuses are the statuses of servers, with the OAuth state of the
// remote ones; now computes uptimes.
func (s *Service) serverStatuses(servers []supervisor.Status, now time.Time) []service.ServerStatus {
	out := make([]service.ServerStatus, len(servers))
	for i, st := range servers {
		out[i] = serverStatusOf(st, now)
	}
	s.addOAuthStatus(out)
	return out
}

// serverStatusOf is one supervisor status as the service reports it; now
// computes uptime.
func serverStatusOf(st supervisor.Status, now time.Time) service.ServerStatus {
	c := st.Cache
	out := service.ServerStatus{
		Name: st.Name, State: service.State(st.State), Pid: st.Pid, StartedAt: st.StartedAt, Restarts: st.Restarts,
		Era: string(st.Era), ProtocolVersion: st.ProtocolVersion, ServerInfo: st.ServerInfo, Capabilities: st.Capabilities,
		Instructions: st.Instructions, LastError: st.LastError, ConfigError: st.ConfigError, LastExit: st.LastExit,
		LastStderrLine: st.LastStderrLine, Autostart: st.Autostart, Disabled: st.Disabled, ExplicitlyStopped: st.ExplicitlyStopped,
		NextRestartIn: st.NextRestartIn, CallsInFlight: st.CallsInFlight, CallsTotal: st.CallsTotal, CallsFailed: st.CallsFailed,
		LinesSkipped: st.LinesSkipped, LinesOversize: st.LinesOversize, ResponsesDropped: st.ResponsesDropped,
		MessagesInvalid: st.MessagesInvalid, Command: st.Command, Sandbox: st.Sandbox, ToolChangesPending: st.ToolChangesPending,
		Share: st.Share, MaxInstances: st.MaxInstances, Instance: st.Instance, Root: st.Root,
		Cache: service.CacheStats{Policy: c.Policy, Hits: c.Hits, Misses: c.Misses, Coalesced: c.Coalesced,
			Invalidations: c.Invalidations, Evictions: c.Evictions, Entries: c.Entries, Bytes: c.Bytes},
	}
	if !st.StartedAt.IsZero() {
		out.Uptime = max(now.Sub(st.StartedAt), 0)
	}
	for _, in := range st.Instances {
		out.Instances = append(out.Instances, serverStatusOf(in, now))
	}
	return out
}

// oauthStatusOf is a remote server's OAuth state as the service reports
// it.
func oauthStatusOf(st oauth.Status) *service.OAuthStatus {
	return &service.OAuthStatus{LoggedIn: st.LoggedIn, LoginRequired: st.LoginRequired, Reason: st.Reason,
		LoginInProgress: st.LoginInProgress, Issuer: st.Issuer, Resource: st.Resource, ClientID: st.ClientID,
		Scopes: st.Scopes, Expiry: st.Expiry, HasRefreshToken: st.HasRefreshToken}
}

// sharingOf is the sharing summary as the service reports it; PSS is 0
// unless it was read for every process.
func sharingOf(sh sharing) service.Sharing {
	out := service.Sharing{Apps: sh.apps, Hosts: sh.hosts, Processes: sh.processes, RemoteServers: sh.remote,
		RSSBytes: sh.mem.RSS, ProcessesWithoutMcpd: sh.withoutProcesses, RSSBytesWithoutMcpd: sh.withoutRSS}
	if sh.mem.PSSKnown {
		out.PSSBytes, out.PSSBytesWithoutMcpd = sh.mem.PSS, sh.withoutPSS
	}
	return out
}
