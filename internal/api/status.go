package api

import (
	"time"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// daemonStatus is the daemon's status, what GetStatus reports but the
// apps and subscriptions, built once for every door: apps are the
// connected apps, whose use of the servers the sharing summary counts.
func (s *Server) daemonStatus(apps []appStatus) service.Status {
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
func (s *Server) serverStatuses(servers []supervisor.Status, now time.Time) []service.ServerStatus {
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

// statusToProto is st as GetStatus sends it.
func statusToProto(st service.Status) *mcpdv1.GetStatusResponse {
	out := &mcpdv1.GetStatusResponse{
		Version:     st.Version,
		Pid:         int64(st.Pid),
		UptimeMs:    st.Uptime.Milliseconds(),
		ConfigPath:  st.ConfigPath,
		ConfigError: st.ConfigError,
		SocketPath:  st.SocketPath,
		AuditPath:   st.AuditPath,
		Secrets:     st.Secrets,
		OauthTokens: st.OAuthTokens,
		Http:        httpStatusToProto(st.HTTP),
		Profiles:    make([]*mcpdv1.ProfileInfo, 0, len(st.Profiles)),
	}
	for _, sv := range st.Servers {
		out.Servers = append(out.Servers, serverStatusToProto(sv))
	}
	sh := st.Sharing
	out.Sharing = &mcpdv1.SharingStatus{
		Apps: int32(sh.Apps), Hosts: int32(sh.Hosts), Processes: int32(sh.Processes), RemoteServers: int32(sh.RemoteServers),
		RssBytes: sh.RSSBytes, PssBytes: sh.PSSBytes, ProcessesWithoutMcpd: int32(sh.ProcessesWithoutMcpd),
		RssBytesWithoutMcpd: sh.RSSBytesWithoutMcpd, PssBytesWithoutMcpd: sh.PSSBytesWithoutMcpd,
	}
	for _, p := range st.Profiles {
		out.Profiles = append(out.Profiles, &mcpdv1.ProfileInfo{Name: p.Name, Prefix: p.Prefix, Servers: p.Servers})
	}
	return out
}

// httpStatusToProto is the HTTP face's entry of GetStatus; nil when it was
// never set up.
func httpStatusToProto(h service.HTTPStatus) *mcpdv1.HttpStatus {
	if h.Listen == "" && h.OffReason == "" && len(h.URLs) == 0 {
		return nil
	}
	return &mcpdv1.HttpStatus{Listen: h.Listen, Urls: h.URLs, OffReason: h.OffReason}
}

// serverStatusToProto is one server's status as mcpd.v1 sends it.
func serverStatusToProto(st service.ServerStatus) *mcpdv1.ServerStatus {
	out := &mcpdv1.ServerStatus{
		Name:               st.Name,
		State:              stateToProto(st.State),
		Pid:                int64(st.Pid),
		Restarts:           int64(st.Restarts),
		Era:                st.Era,
		ProtocolVersion:    st.ProtocolVersion,
		ServerInfoJson:     string(st.ServerInfo),
		LastError:          st.LastError,
		ConfigError:        st.ConfigError,
		Sandbox:            st.Sandbox,
		LastExit:           st.LastExit,
		LastStderrLine:     st.LastStderrLine,
		Autostart:          st.Autostart,
		Disabled:           st.Disabled,
		ExplicitlyStopped:  st.ExplicitlyStopped,
		NextRestartInMs:    st.NextRestartIn.Milliseconds(),
		CallsInFlight:      st.CallsInFlight,
		CallsTotal:         st.CallsTotal,
		CallsFailed:        st.CallsFailed,
		LinesSkipped:       st.LinesSkipped,
		LinesOversize:      st.LinesOversize,
		ResponsesDropped:   st.ResponsesDropped,
		MessagesInvalid:    st.MessagesInvalid,
		CapabilitiesJson:   string(st.Capabilities),
		Instructions:       st.Instructions,
		Command:            st.Command,
		Cache:              cacheStatsToProto(st.Cache),
		ToolChangesPending: int64(st.ToolChangesPending),
		Share:              st.Share,
		MaxInstances:       int64(st.MaxInstances),
		Instance:           st.Instance,
		Root:               st.Root,
	}
	if !st.StartedAt.IsZero() {
		out.StartedAtUnixMs = st.StartedAt.UnixMilli()
		out.UptimeMs = st.Uptime.Milliseconds()
	}
	if st.OAuth != nil {
		out.Oauth = oauthToProto(st.OAuth)
	}
	for _, in := range st.Instances {
		out.Instances = append(out.Instances, serverStatusToProto(in))
	}
	return out
}

// cacheStatsToProto converts a server's cache stats; a cache that has never
// been used and has the default policy is left out (nil).
func cacheStatsToProto(st service.CacheStats) *mcpdv1.CacheStats {
	if st == (service.CacheStats{}) {
		return nil
	}
	return &mcpdv1.CacheStats{
		Hits:          st.Hits,
		Misses:        st.Misses,
		Coalesced:     st.Coalesced,
		Entries:       st.Entries,
		Bytes:         st.Bytes,
		Invalidations: st.Invalidations,
		Evictions:     st.Evictions,
		Policy:        st.Policy,
	}
}

func oauthToProto(st *service.OAuthStatus) *mcpdv1.OAuthStatus {
	p := &mcpdv1.OAuthStatus{
		LoggedIn:        st.LoggedIn,
		LoginRequired:   st.LoginRequired,
		Reason:          st.Reason,
		LoginInProgress: st.LoginInProgress,
		Issuer:          st.Issuer,
		Resource:        st.Resource,
		ClientId:        st.ClientID,
		Scopes:          st.Scopes,
		HasRefreshToken: st.HasRefreshToken,
	}
	if !st.Expiry.IsZero() {
		p.ExpiresAtUnixMs = st.Expiry.UnixMilli()
	}
	return p
}

func stateToProto(s service.State) mcpdv1.ServerState {
	switch s {
	case service.StateStopped:
		return mcpdv1.ServerState_SERVER_STATE_STOPPED
	case service.StateStarting:
		return mcpdv1.ServerState_SERVER_STATE_STARTING
	case service.StateReady:
		return mcpdv1.ServerState_SERVER_STATE_READY
	case service.StateBackoff:
		return mcpdv1.ServerState_SERVER_STATE_BACKOFF
	case service.StateCrashLoop:
		return mcpdv1.ServerState_SERVER_STATE_CRASHLOOP
	case service.StateStopping:
		return mcpdv1.ServerState_SERVER_STATE_STOPPING
	case service.StateFailed:
		return mcpdv1.ServerState_SERVER_STATE_FAILED
	case service.StateLoginRequired:
		return mcpdv1.ServerState_SERVER_STATE_LOGIN_REQUIRED
	}
	return mcpdv1.ServerState_SERVER_STATE_UNSPECIFIED
}
