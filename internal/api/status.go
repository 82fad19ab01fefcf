package api

import (
	"github.com/mcpd-dev/mcpd/internal/service"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

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
