package service

import (
	"encoding/json"
	"time"
)

// Status is the daemon's status: mcpd itself and every configured
// server. The connected apps are listed apart (core.Service.Status).
type Status struct {
	Version     string
	Pid         int
	Uptime      time.Duration
	ConfigPath  string
	ConfigError string // the last config load's error; "" when it was valid
	SocketPath  string
	// AuditPath is the audit log file; "" when the audit log is off.
	AuditPath string
	// Secrets and OAuthTokens say where mcpd reads the secret values and
	// keeps the OAuth tokens ("" when it does not say); never a value.
	Secrets     string
	OAuthTokens string
	Servers     []ServerStatus
	HTTP        HTTPStatus
	Sharing     Sharing
	Profiles    []Profile
}

// State is a server's lifecycle state, in words.
type State string

// The lifecycle states.
const (
	StateStopped       State = "stopped"
	StateStarting      State = "starting"
	StateReady         State = "ready"
	StateBackoff       State = "backoff"
	StateCrashLoop     State = "crashloop"
	StateStopping      State = "stopping"
	StateFailed        State = "failed"
	StateLoginRequired State = "login required"
)

// ServerStatus is one server's status, or one instance's of a shared
// server.
type ServerStatus struct {
	Name  string
	State State
	Pid   int
	// StartedAt is when the running process started (zero when none);
	// Uptime how long it has run.
	StartedAt       time.Time
	Uptime          time.Duration
	Restarts        int
	Era             string
	ProtocolVersion string
	// ServerInfo, Capabilities: the server's serverInfo and capabilities,
	// JSON objects as it sent them; nil before its handshake.
	ServerInfo        json.RawMessage
	Capabilities      json.RawMessage
	Instructions      string
	LastError         string
	ConfigError       string
	LastExit          string
	LastStderrLine    string
	Autostart         bool
	Disabled          bool
	ExplicitlyStopped bool
	NextRestartIn     time.Duration
	CallsInFlight     int64
	CallsTotal        int64
	CallsFailed       int64
	LinesSkipped      int64
	LinesOversize     int64
	ResponsesDropped  int64
	MessagesInvalid   int64
	// Command is the command line, or a remote server's URL.
	Command            string
	Cache              CacheStats
	Sandbox            string
	ToolChangesPending int
	Share              string
	MaxInstances       int
	// Instance and Root name an instance of a shared server.
	Instance  string
	Root      string
	Instances []ServerStatus
	// OAuth is a remote server's OAuth state; nil for any other server.
	OAuth *OAuthStatus
}

// CacheStats are a server's result cache counters; zero when it never
// cached.
type CacheStats struct {
	Policy                  string
	Hits, Misses, Coalesced int64
	Invalidations           int64
	Evictions               int64
	Entries, Bytes          int64
}

// OAuthStatus is a remote server's OAuth state: never a token.
type OAuthStatus struct {
	LoggedIn bool
	// LoginRequired: calls fail until a login; Reason says why.
	LoginRequired   bool
	Reason          string
	LoginInProgress bool
	Issuer          string
	Resource        string
	ClientID        string
	Scopes          []string
	Expiry          time.Time // zero: unknown
	HasRefreshToken bool
}

// HTTPStatus is mcpd's HTTP face: where it listens and its URLs, or why
// it is off.
type HTTPStatus struct {
	Listen    string
	URLs      []string
	OffReason string
}

// Sharing compares the server processes mcpd runs for the connected apps
// with what the same apps would run without mcpd. PSS is 0 unless it was
// read for every process.
type Sharing struct {
	Apps, Hosts, Processes, RemoteServers int
	RSSBytes, PSSBytes                    int64
	ProcessesWithoutMcpd                  int
	RSSBytesWithoutMcpd                   int64
	PSSBytesWithoutMcpd                   int64
}

// Profile is one of the config's profiles.
type Profile struct {
	Name    string
	Prefix  string
	Servers []string
}

// ToolChanges are how a server's tools differ from their pinned
// definitions, under its pin mode.
type ToolChanges struct {
	Server  string
	PinMode string
	PinsDir string
	Changes []ToolChange
}

// ToolChange is one changed tool: its definition pinned and current (JSON
// objects; nil when absent).
type ToolChange struct {
	Tool          string
	Kind          string
	Members       []string
	Pinned        json.RawMessage
	Current       json.RawMessage
	PinnedDigest  string
	CurrentDigest string
	Variant       string
	Capabilities  json.RawMessage
}
