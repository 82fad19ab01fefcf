package supervisor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/transport"
)

// Sentinel errors; causes are wrapped with the server name and details.
var (
	// ErrUnknownServer: no server of that name is configured.
	ErrUnknownServer = errors.New("supervisor: unknown server")
	// ErrUnavailable: the server cannot serve now (crash loop, failed,
	// disabled, explicitly stopped, shutting down). The wrapping error names
	// the server, its last exit and last stderr lines.
	ErrUnavailable = errors.New("supervisor: server unavailable")
	// ErrInvalid: the request itself is malformed (e.g. params not a JSON object).
	ErrInvalid = errors.New("supervisor: invalid request")
	// ErrAlreadyRunning is returned by Run when it is called a second time.
	ErrAlreadyRunning = errors.New("supervisor: already running")
)

// unavailableError is an error that matches ErrUnavailable with errors.Is
// while keeping a message written for the operator (it says what to do), and
// optionally wraps a cause.
type unavailableError struct {
	msg   string
	cause error
	// causeInMsg: msg already says what cause says.
	causeInMsg bool
}

func (e *unavailableError) Error() string {
	if e.cause != nil && !e.causeInMsg {
		return e.msg + ": " + e.cause.Error()
	}
	return e.msg
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *unavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *unavailableError) Unwrap() error { return e.cause }

func unavailable(cause error, format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf(format, args...), cause: cause}
}

// errShuttingDown is returned for calls after (or during) daemon shutdown.
var errShuttingDown = unavailable(nil, "mcpd is shutting down")

// unknownServer wraps ErrUnknownServer with the name.
func unknownServer(name string) error {
	return fmt.Errorf("%w %q", ErrUnknownServer, name)
}

// stderrTail formats up to n last stderr lines of ring for an error message,
// or "" when there are none.
func stderrTail(ring *transport.Ring, n int) string {
	lines := ring.Last(n)
	if len(lines) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("; last stderr lines:")
	for _, l := range lines {
		b.WriteString("\n  ")
		b.WriteString(l.Text)
	}
	return b.String()
}

// ConfigError is why a server is failed when its config cannot be used
// (Spec.Invalid); calls to it fail with ErrUnavailable wrapping it.
type ConfigError struct {
	Server string
	// Problem is Spec.Invalid: the server's problems in the config file.
	Problem string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("server %q: config: %s", e.Server, e.Problem)
}

func configError(spec Spec) error { return &ConfigError{Server: spec.Name, Problem: spec.Invalid} }
