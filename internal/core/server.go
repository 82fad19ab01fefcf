package core

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
)

// Defaults and bounds of the operator RPCs.
const (
	// DefaultLogLines is how many stderr lines GetLogs returns when the
	// request asks for 0.
	DefaultLogLines = 100
	// MaxLogLines caps GetLogsRequest.lines.
	MaxLogLines = 100000
)

// Backend is what the Service needs of the supervisor;
// *supervisor.Supervisor implements it. Tests substitute a fake.
type Backend interface {
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

var _ Backend = (*supervisor.Supervisor)(nil)

// Options configure a Service. Zero values mean the documented defaults.
type Options struct {
	// Logger may be nil.
	Logger *zap.Logger
	// SocketPath is reported by GetStatus.
	SocketPath string
	// ConfigPath is reported by GetStatus.
	ConfigPath string
	// StartTime is when the daemon started. If zero, the time New was
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

// Service is mcpd's in-process service on top of a supervisor. Its
// methods are safe for concurrent use.
type Service struct {
	sup    Backend
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

// New returns the service on b, the daemon's *supervisor.Supervisor (or a
// test's stand-in). The gRPC door serves it with api.NewGRPCServer; the
// in-process doors call it through NewLocalApp.
func New(b Backend, opts Options) *Service {
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	start := opts.StartTime
	if start.IsZero() {
		start = time.Now()
	}
	s := &Service{
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
func (s *Service) SetSocketPath(path string) {
	s.mu.Lock()
	s.socketPath = path
	s.mu.Unlock()
}

// SetConfig sets the config path GetStatus reports and the error of the
// last load of it (nil when it was valid).
func (s *Service) SetConfig(path string, loadErr error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.configPath = path
	s.configError = ""
	if loadErr != nil {
		s.configError = loadErr.Error()
	}
}

// ListServers lists the configured servers of the call's profile (every
// one without a profile), and that profile.
func (s *Service) ListServers(ctx context.Context) (*service.Servers, error) {
	p, err := s.profileOf(ctx)
	if err != nil {
		return nil, err
	}
	var sts []supervisor.Status
	for _, st := range s.sup.Status() {
		if p == nil || p.Server(st.Name) != nil {
			sts = append(sts, st)
		}
	}
	out := &service.Servers{Servers: s.serverStatuses(sts, time.Now())}
	if p != nil {
		out.Profile = &service.Profile{Name: p.Name, Prefix: string(p.Prefix), Servers: p.ServerNames()}
	}
	return out, nil
}

// Control starts, stops or restarts (op) server name, every door's way,
// and returns its status after.
func (s *Service) Control(ctx context.Context, name string, op func(context.Context, string) (supervisor.Status, error)) (service.ServerStatus, error) {
	if name == "" {
		return service.ServerStatus{}, codeError(service.InvalidArgument, "server name required")
	}
	st, err := op(ctx, name)
	if err != nil {
		return service.ServerStatus{}, ToError(err)
	}
	return serverStatusOf(st, time.Now()), nil
}

// Logs are the last n (0: DefaultLogLines, capped at MaxLogLines) stderr
// lines of server name, or of mcpd's own log when name is "".
func (s *Service) Logs(name string, n int) ([]service.LogLine, error) {
	daemonLog := s.opsSnapshot().daemonLog // ops.go: an empty name means mcpd's own log
	if name == "" && daemonLog == nil {
		return nil, codeError(service.InvalidArgument, "server name required")
	}
	switch {
	case n < 0:
		return nil, codeError(service.InvalidArgument, "lines must not be negative, got %d", n)
	case n == 0:
		n = DefaultLogLines
	case n > MaxLogLines:
		n = MaxLogLines
	}
	var lines []transport.Line
	if name == "" {
		lines = daemonLog.Last(n)
	} else {
		var err error
		if lines, err = s.sup.Logs(name, n); err != nil {
			return nil, ToError(err)
		}
	}
	out := make([]service.LogLine, len(lines))
	for i, l := range lines {
		out[i] = logLineOf(l)
	}
	return out, nil
}

// StartServer starts server name and waits until it is ready or failed.
func (s *Service) StartServer(ctx context.Context, name string) (service.ServerStatus, error) {
	return s.Control(ctx, name, s.sup.Start)
}

// StopServer stops server name; it stays stopped until started again.
func (s *Service) StopServer(ctx context.Context, name string) (service.ServerStatus, error) {
	return s.Control(ctx, name, s.sup.Stop)
}

// RestartServer stops server name if it runs and starts it again.
func (s *Service) RestartServer(ctx context.Context, name string) (service.ServerStatus, error) {
	return s.Control(ctx, name, s.sup.Restart)
}

// ClearCache drops the cached results of server name, or of every server
// when name is "", returning how many it dropped.
func (s *Service) ClearCache(name string) (int, error) {
	n, err := s.sup.ClearCache(name)
	return n, ToError(err)
}

// Status reports the daemon and every configured server, and the
// connected apps, oldest connection first.
func (s *Service) Status() (service.Status, []ConnectedApp) {
	apps := s.apps.snapshot()
	return s.daemonStatus(apps), apps
}
