package api

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Defaults and bounds of the operator RPCs.
const (
	// DefaultLogLines is how many stderr lines GetLogs returns when the
	// request asks for 0.
	DefaultLogLines = 100
	// MaxLogLines caps GetLogsRequest.lines.
	MaxLogLines = 100000
)

// backend is what the Server needs of the supervisor;
// *supervisor.Supervisor implements it. Tests substitute a fake.
type backend interface {
	// CallCached, ListCached and ClearCache go through the result cache
	// (internal/supervisor/cache.go).
	CallCached(ctx context.Context, server string, req *session.Request, opts supervisor.CallOptions) (*session.Response, cache.Source, error)
	ListCached(ctx context.Context, server, method string, base *session.Request, opts supervisor.CallOptions) (json.RawMessage, cache.Source, error)
	ClearCache(name string) (int, error)
	Start(ctx context.Context, name string) (supervisor.Status, error)
	Stop(ctx context.Context, name string) (supervisor.Status, error)
	Restart(ctx context.Context, name string) (supervisor.Status, error)
	Status() []supervisor.Status
	ServerStatus(name string) (supervisor.Status, error)
	Logs(name string, n int) ([]transport.Line, error)
	Names() []string
}

var _ backend = (*supervisor.Supervisor)(nil)

// Options configure a Server. Zero values mean the documented defaults.
type Options struct {
	// Logger may be nil.
	Logger *zap.Logger
	// SocketPath is reported by GetStatus.
	SocketPath string
	// ConfigPath is reported by GetStatus.
	ConfigPath string
	// StartTime is when the daemon started. If zero, the time NewServer was
	// called is used.
	StartTime time.Time
	// Observer, if set, is told the duration of every MCP request per
	// server and method (metrics.go).
	Observer CallObserver
	// RequestMemoryBudget bounds the sum of the sizes of the requests in
	// flight, in bytes; past it a request is refused with
	// RESOURCE_EXHAUSTED (budget.go). If zero, DefaultRequestMemoryBudget
	// (256 MiB) is used.
	RequestMemoryBudget int64
	// Audit configures the audit log (audit.go); zero: none.
	Audit AuditOptions
	// Tracer, if set, traces every app request (tracing.go).
	Tracer Tracer
	// SecretsBackend, if set, says where ${secret:NAME} values are read
	// from, for GetStatus (internal/secrets.Store.Backend).
	SecretsBackend func() string
	// OAuthStore, if set, says where the OAuth tokens are kept, for
	// GetStatus (internal/oauth.Manager.StoreStatus).
	OAuthStore func() string
}

// Server implements the mcpd.v1.Mcpd service on top of a supervisor. Its
// methods are safe for concurrent use.
type Server struct {
	mcpdv1.UnimplementedMcpdServer

	sup    backend
	log    *zap.Logger
	apps   *appTracker
	hosts  *hostRegistry // Host streams and calls in flight (host.go)
	memory *memoryMeter  // the children's memory, for GetStatus (sharing.go)
	start  time.Time
	pid    int
	obs    CallObserver // nil: requests are not timed (metrics.go)
	budget *memBudget   // memory of the requests in flight (budget.go)
	// profiles are the config's profiles (profiles.go), swapped whole.
	profiles   atomic.Pointer[profile.Set]
	audit      atomic.Pointer[AuditOptions] // the audit log (audit.go), swapped whole
	tracer     Tracer                       // nil: no traces (tracing.go)
	secrets    func() string                // nil: GetStatus reports no secret store
	oauthStore func() string                // nil: GetStatus reports no OAuth token store

	mu          sync.Mutex // guards following
	socketPath  string
	configPath  string
	configError string
	ops         opsState   // config reload/check and mcpd's own log (ops.go)
	http        HTTPState  // mcpd's HTTP face (httpstatus.go)
	remoteAuth  RemoteAuth // OAuth logins of remote servers (login.go); nil: none
}

var _ mcpdv1.McpdServer = (*Server)(nil)

// NewServer returns the service for sup. Register it with NewGRPCServer,
// which also installs the connection tracking that GetStatus reports.
func NewServer(sup *supervisor.Supervisor, opts Options) *Server {
	return newServer(sup, opts)
}

func newServer(b backend, opts Options) *Server {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	start := opts.StartTime
	if start.IsZero() {
		start = time.Now()
	}
	s := &Server{
		sup:        b,
		log:        log,
		apps:       newAppTracker(),
		hosts:      newHostRegistry(),
		memory:     newMemoryMeter(),
		start:      start,
		pid:        os.Getpid(),
		obs:        opts.Observer,
		budget:     newMemBudget(opts.RequestMemoryBudget),
		tracer:     opts.Tracer,
		secrets:    opts.SecretsBackend,
		oauthStore: opts.OAuthStore,
		socketPath: opts.SocketPath,
		configPath: opts.ConfigPath,
	}
	s.SetAudit(opts.Audit)
	return s
}

// SetSocketPath sets the socket path GetStatus reports.
func (s *Server) SetSocketPath(path string) {
	s.mu.Lock()
	s.socketPath = path
	s.mu.Unlock()
}

// SetConfig sets the config path GetStatus reports and the error of the
// last load of it (nil when it was valid).
func (s *Server) SetConfig(path string, loadErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configPath = path
	s.configError = ""
	if loadErr != nil {
		s.configError = loadErr.Error()
	}
}

// GetStatus reports the daemon, every configured server and the connected apps.
func (s *Server) GetStatus(ctx context.Context, _ *mcpdv1.GetStatusRequest) (*mcpdv1.GetStatusResponse, error) {
	now := time.Now()
	s.mu.Lock()
	resp := &mcpdv1.GetStatusResponse{
		Version:     version.Version,
		Pid:         int64(s.pid),
		UptimeMs:    now.Sub(s.start).Milliseconds(),
		ConfigPath:  s.configPath,
		ConfigError: s.configError,
		SocketPath:  s.socketPath,
	}
	s.mu.Unlock()
	servers := s.sup.Status()
	for _, st := range servers {
		resp.Servers = append(resp.Servers, serverStatusToProto(st, now))
	}
	s.addOAuthStatus(resp.Servers)
	identifyFromMetadata(ctx)
	apps := s.apps.snapshot()
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
	resp.Sharing = sharingToProto(s.sharingStatus(apps, servers))
	resp.Profiles = s.profileInfos()
	resp.Subscriptions = s.subscriptionStatus()
	resp.Http = s.httpStatus()
	if a := s.auditOptions(); a.Log != nil {
		resp.AuditPath = a.Log.Path()
	}
	if f := s.secrets; f != nil {
		resp.Secrets = f()
	}
	if f := s.oauthStore; f != nil {
		resp.OauthTokens = f()
	}
	return resp, nil
}

// ListServers lists the configured servers with their state.
// Under a profile only its servers are listed.
func (s *Server) ListServers(ctx context.Context, _ *mcpdv1.ListServersRequest) (*mcpdv1.ListServersResponse, error) {
	p, err := s.profileOf(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	resp := &mcpdv1.ListServersResponse{Profile: profileInfo(p)}
	for _, st := range s.sup.Status() {
		if p == nil || p.Server(st.Name) != nil {
			resp.Servers = append(resp.Servers, serverStatusToProto(st, now))
		}
	}
	s.addOAuthStatus(resp.Servers)
	return resp, nil
}

// StartServer starts a server and waits until it is ready or failed.
func (s *Server) StartServer(ctx context.Context, req *mcpdv1.StartServerRequest) (*mcpdv1.StartServerResponse, error) {
	if req.GetName() == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	st, err := s.sup.Start(ctx, req.GetName())
	if err != nil {
		return nil, toError(err)
	}
	return &mcpdv1.StartServerResponse{Server: serverStatusToProto(st, time.Now())}, nil
}

// StopServer stops a server; it stays stopped until started again.
func (s *Server) StopServer(ctx context.Context, req *mcpdv1.StopServerRequest) (*mcpdv1.StopServerResponse, error) {
	if req.GetName() == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	st, err := s.sup.Stop(ctx, req.GetName())
	if err != nil {
		return nil, toError(err)
	}
	return &mcpdv1.StopServerResponse{Server: serverStatusToProto(st, time.Now())}, nil
}

// RestartServer stops a server if it runs and starts it again.
func (s *Server) RestartServer(ctx context.Context, req *mcpdv1.RestartServerRequest) (*mcpdv1.RestartServerResponse, error) {
	if req.GetName() == "" {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	st, err := s.sup.Restart(ctx, req.GetName())
	if err != nil {
		return nil, toError(err)
	}
	return &mcpdv1.RestartServerResponse{Server: serverStatusToProto(st, time.Now())}, nil
}

// GetLogs returns the most recent stderr lines of a server.
func (s *Server) GetLogs(ctx context.Context, req *mcpdv1.GetLogsRequest) (*mcpdv1.GetLogsResponse, error) {
	daemonLog := s.opsSnapshot().daemonLog // ops.go: an empty name means mcpd's own log
	if req.GetName() == "" && daemonLog == nil {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	n := int(req.GetLines())
	switch {
	case n < 0:
		return nil, codeError(service.InvalidArgument, "lines must not be negative, got %d", n)
	case n == 0:
		n = DefaultLogLines
	case n > MaxLogLines:
		n = MaxLogLines
	}
	var lines []transport.Line
	var err error
	if req.GetName() == "" {
		lines = daemonLog.Last(n)
	} else if lines, err = s.sup.Logs(req.GetName(), n); err != nil {
		return nil, toError(err)
	}
	resp := &mcpdv1.GetLogsResponse{Lines: make([]*mcpdv1.LogLine, 0, len(lines))}
	for _, l := range lines {
		resp.Lines = append(resp.Lines, &mcpdv1.LogLine{
			TimeUnixMs: l.Time.UnixMilli(),
			Text:       l.Text,
			Truncated:  l.Truncated,
			Pid:        int64(l.Pid),
		})
	}
	return resp, nil
}

// serverStatusToProto converts one supervisor status; now computes uptime.
func serverStatusToProto(st supervisor.Status, now time.Time) *mcpdv1.ServerStatus {
	out := &mcpdv1.ServerStatus{
		Name:               st.Name,
		State:              stateToProto(st.State),
		Pid:                int64(st.Pid),
		Restarts:           int64(st.Restarts),
		Era:                string(st.Era),
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
		out.UptimeMs = max(now.Sub(st.StartedAt).Milliseconds(), 0)
	}
	for _, in := range st.Instances {
		out.Instances = append(out.Instances, serverStatusToProto(in, now))
	}
	return out
}

func stateToProto(s supervisor.State) mcpdv1.ServerState {
	switch s {
	case supervisor.StateStopped:
		return mcpdv1.ServerState_SERVER_STATE_STOPPED
	case supervisor.StateStarting:
		return mcpdv1.ServerState_SERVER_STATE_STARTING
	case supervisor.StateReady:
		return mcpdv1.ServerState_SERVER_STATE_READY
	case supervisor.StateBackoff:
		return mcpdv1.ServerState_SERVER_STATE_BACKOFF
	case supervisor.StateCrashLoop:
		return mcpdv1.ServerState_SERVER_STATE_CRASHLOOP
	case supervisor.StateStopping:
		return mcpdv1.ServerState_SERVER_STATE_STOPPING
	case supervisor.StateFailed:
		return mcpdv1.ServerState_SERVER_STATE_FAILED
	case supervisor.StateLoginRequired:
		return mcpdv1.ServerState_SERVER_STATE_LOGIN_REQUIRED
	}
	return mcpdv1.ServerState_SERVER_STATE_UNSPECIFIED
}

// sharingToProto converts the sharing summary; PSS is 0 unless it was read
// for every process.
func sharingToProto(sh sharing) *mcpdv1.SharingStatus {
	out := &mcpdv1.SharingStatus{
		Apps:                 int32(sh.apps),
		Hosts:                int32(sh.hosts),
		Processes:            int32(sh.processes),
		RemoteServers:        int32(sh.remote),
		RssBytes:             sh.mem.RSS,
		ProcessesWithoutMcpd: int32(sh.withoutProcesses),
		RssBytesWithoutMcpd:  sh.withoutRSS,
	}
	if sh.mem.PSSKnown {
		out.PssBytes, out.PssBytesWithoutMcpd = sh.mem.PSS, sh.withoutPSS
	}
	return out
}
