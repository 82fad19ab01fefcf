package supervisor

import (
	"encoding/json"
	"time"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/sandbox"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// Restart policies.
const (
	RestartOnFailure = "on-failure"
	RestartAlways    = "always"
	RestartNever     = "never"
)

// Defaults used when the matching Options or Spec field is zero.
const (
	DefaultRequestTimeout    = 60 * time.Second
	DefaultCrashLoopMax      = 5
	DefaultCrashLoopWindow   = 60 * time.Second
	DefaultCrashLoopCooldown = 60 * time.Second
	DefaultBackoffMin        = 250 * time.Millisecond
	DefaultBackoffMax        = 30 * time.Second
	DefaultMaxRequestTimeout = 10 * time.Minute
	DefaultHandshakeTimeout  = 30 * time.Second
)

// Spec is one server as configured.
type Spec struct {
	Name    string
	Command string
	Args    []string
	// Env is merged over mcpd's environment.
	Env map[string]string
	Cwd string
	// Protocol is session.ProtocolAuto, ProtocolModern or ProtocolLegacy.
	Protocol  string
	Autostart bool
	// Restart is RestartOnFailure (default when empty), RestartAlways or RestartNever.
	//
	// on-failure restarts after an unexpected exit when there is demand
	// (autostart, callers waiting); always restarts after every unexpected
	// exit; never does not restart automatically (the next Call starts it).
	Restart string
	// RequestTimeout is the default deadline of a request. If zero, 60s.
	RequestTimeout time.Duration
	// ShutdownGrace is each wait of the stop sequence. If zero, 2s.
	ShutdownGrace time.Duration
	// DiscoverTimeout bounds the server/discover probe. If zero, 3s.
	DiscoverTimeout time.Duration
	// MaxLineSize caps one stdout line. If zero, 32 MiB.
	MaxLineSize int
	Disabled    bool
	// Cache is the result cache policy: "" (default: cache only what the
	// server promises to keep valid), a duration such as "30s", "never" or
	// "always"; see internal/cache.
	Cache string
	// Roots, Sampling and Elicitation say whether mcpd declares that client
	// capability to a legacy child at initialize (and so forwards the
	// child's roots/list, sampling/createMessage, elicitation/create to
	// Options.OnRequest). Nil means on. Options.Capabilities, when set,
	// overrides all three.
	Roots       *bool
	Sampling    *bool
	Elicitation *bool
	// RootPaths are the absolute directories mcpd answers a child's
	// roots/list with when no host answers it (roots.go); none answers an
	// empty list. A change is applied in place and announced to the child.
	RootPaths []string
	// IdleTimeout, if positive, stops the child once it has had no call in
	// flight and no app subscription for that long (idle.go); the next call
	// starts it again. Ignored with Autostart or RestartAlways, which mean
	// "keep it running". Zero: never.
	IdleTimeout time.Duration
	// StdinTimeout is how long the child may leave its stdin unread while
	// mcpd has a message for it; then it is hung: killed, and restarted
	// like a crash. If zero, 10s (transport.DefaultStdinTimeout).
	StdinTimeout time.Duration
	// Remote, when set, makes this a remote server reached over HTTP
	// (backend.go); Command, Args, Env, Cwd and StdinTimeout are unused.
	Remote *config.Remote
	// Sandbox, if set, confines the server's processes (internal/sandbox:
	// Landlock, rlimits, cgroup limits). A change restarts the server.
	Sandbox *sandbox.Policy
	// Invalid, when set, is why the config of the server cannot be used
	// (config.Server.Invalid): the server is failed with that reason and
	// never started, until a reload gives it a valid config.
	Invalid string
	// Pin is the tool pinning mode: "off", "warn" or "enforce"; "" is
	// pin.DefaultMode (pin.go). Without Options.Pins nothing is pinned.
	Pin string
	// Share is ShareGlobal ("" too: one child for every app), ShareClient
	// (one instance per app identity) or ShareRoot (one instance per
	// workspace root, started with it as its working directory); see
	// instances.go. Autostart is ignored when shared.
	Share string
	// MaxInstances caps the instances of a shared server; 0: no cap.
	MaxInstances int
	// ClientCapabilities adds to and removes from what mcpd declares to a
	// legacy child at initialize (clientcaps.go); nil: nothing. A change
	// restarts the server.
	ClientCapabilities *config.ClientCaps
}

// State is a server's lifecycle state.
type State string

const (
	StateStopped   State = "stopped"
	StateStarting  State = "starting"
	StateReady     State = "ready"
	StateBackoff   State = "backoff"
	StateCrashLoop State = "crashloop"
	StateStopping  State = "stopping"
	StateFailed    State = "failed"
	// StateLoginRequired: a remote server needs the user to log in
	// (mcpdctl login NAME); it is not retried until then.
	StateLoginRequired State = "login required"
)

// Status is a snapshot of one server.
type Status struct {
	Name            string
	State           State
	Pid             int
	StartedAt       time.Time // zero when not running
	Restarts        int
	Era             session.Era
	ProtocolVersion string
	ServerInfo      json.RawMessage
	Capabilities    json.RawMessage
	// Instructions is the child's instructions text.
	Instructions string
	LastError    string
	// ConfigError is why the server's config cannot be used (Spec.Invalid)
	// while it is failed for it; LastError then says the same.
	ConfigError       string
	LastExit          string
	LastStderrLine    string
	Autostart         bool
	Disabled          bool
	ExplicitlyStopped bool
	// NextRestartIn is the remaining backoff or crash-loop cooldown.
	NextRestartIn time.Duration
	CallsInFlight int64
	CallsTotal    int64
	// CallsFailed counts calls that returned an error or a JSON-RPC error
	// from the child.
	CallsFailed      int64
	LinesSkipped     int64
	LinesOversize    int64
	ResponsesDropped int64
	// MessagesInvalid counts JSON objects of the child that were neither a
	// request, a response nor a notification, over all its processes.
	MessagesInvalid int64
	Command         string
	// URL is a remote server's URL, without query and credentials.
	URL string
	// Cache is the server's result cache counters and size.
	Cache cache.Stats
	// Sandbox says how the last started child is confined ("landlock ABI
	// 7, network none, memory 256 MiB") and what of its sandbox best
	// effort left out; "" without a sandbox.
	Sandbox string
	// ToolChangesPending counts the tools whose definitions differ from
	// the pinned ones (pin.go).
	ToolChangesPending int
	// Share and MaxInstances are the server's spec's (instances.go).
	Share        string
	MaxInstances int
	// Instance is the key of an instance of a shared server ("" for the
	// server itself); Root is a root instance's workspace root.
	Instance string
	Root     string
	// Instances are a shared server's instances, sorted by key.
	Instances []Status
}
