package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/transport"
)

// Sentinel errors; causes are wrapped with the server name and details.
var (
	// ErrUnknownServer: no server of that name is configured.
	ErrUnknownServer = errors.New("unknown server")
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
	// server is the server msg names first; "" when it names none.
	server string
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

// serverError is err, whose message begins by naming server (ServerOf).
type serverError struct {
	server string
	err    error
}

func (e *serverError) Error() string  { return e.err.Error() }
func (e *serverError) Unwrap() error  { return e.err }
func (e *serverError) Server() string { return e.server }

// errExited is in the cause of a child's context when the child exited
// by itself (not stopped by mcpd).
var errExited = errors.New("the server exited")

func unavailable(cause error, format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf(format, args...), cause: cause}
}

// serverUnavailable is unavailable's error for server, whose message is
// `server "NAME"` followed by format's text.
func serverUnavailable(server, format string, args ...any) error {
	return &unavailableError{msg: fmt.Sprintf("server %q", server) + fmt.Sprintf(format, args...), server: server}
}

// Server is the server the error is about (ServerOf).
func (e *unavailableError) Server() string { return e.server }

// startError is the failure of a server's start, said as
// `start "name": msg`; err, if any, is its cause.
type startError struct {
	server, msg string
	err         error
}

func (e *startError) Error() string  { return fmt.Sprintf("start %q: %s", e.server, e.msg) }
func (e *startError) Unwrap() error  { return e.err }
func (e *startError) Server() string { return e.server }

// startFailed is the start of server failed by err.
func startFailed(server string, err error) *startError {
	return &startError{server: server, msg: err.Error(), err: err}
}

// rewordedError is err said as msg, for an operator: err stays in the chain
// for errors.Is without its text being repeated (a remote server's HTTP
// error, which names the server and the method, said as it is).
type rewordedError struct {
	msg string
	err error
}

func (e *rewordedError) Error() string { return e.msg }
func (e *rewordedError) Unwrap() error { return e.err }

// Bounds of a call (TimeoutError.Bound).
const (
	// BoundRequestTimeout is the server's requestTimeout.
	BoundRequestTimeout = "requestTimeout"
	// BoundCallTimeout is the call's own timeout (CallOptions.Timeout).
	BoundCallTimeout = "timeout"
)

// TimeoutError is a call of Server that ran out of one of mcpd's own
// bounds: Bound (BoundRequestTimeout or BoundCallTimeout), of length After.
// It matches context.DeadlineExceeded with errors.Is.
type TimeoutError struct {
	Server string
	Bound  string
	After  time.Duration
	msg    string
	err    error
}

func (e *TimeoutError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("server %q: timed out after %s (%s)", e.Server, e.After, e.Bound)
	}
	return e.msg
}
func (e *TimeoutError) Unwrap() error { return e.err }

// timedOut rewords err when it is a context.DeadlineExceeded: the
// deadline was mcpd's timeout for the call of server, bound.
func timedOut(err error, server string, timeout time.Duration, bound string) error {
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	which := "its requestTimeout"
	if bound == BoundCallTimeout {
		which = "the call's timeout"
	}
	// Said once: "…: timed out after 30s (…)" in place of "…: context
	// deadline exceeded".
	head, bare := strings.CutSuffix(err.Error(), context.DeadlineExceeded.Error())
	if !bare {
		head += ": "
	}
	return &TimeoutError{
		Server: server, Bound: bound, After: timeout, err: err,
		msg: fmt.Sprintf("%stimed out after %s (%s)", head, timeout, which),
	}
}

// ServerOf is the server err's class says it is about, whose name its
// message says: that of an unavailable server, a failed start, a timed-out
// call or an unknown server. It is "" when err records none.
func ServerOf(err error) string {
	var named interface{ Server() string }
	if errors.As(err, &named) && named.Server() != "" {
		return named.Server()
	}
	var te *TimeoutError
	if errors.As(err, &te) {
		return te.Server
	}
	var ue *UnknownServerError
	if errors.As(err, &ue) {
		return ue.Name
	}
	return ""
}

// UnknownServerError is a call naming a server that is not configured. It
// matches ErrUnknownServer with errors.Is.
type UnknownServerError struct{ Name string }

func (e *UnknownServerError) Error() string { return fmt.Sprintf("%s %q", ErrUnknownServer, e.Name) }
func (e *UnknownServerError) Unwrap() error { return ErrUnknownServer }

// errShuttingDown is returned for calls after (or during) daemon shutdown.
var errShuttingDown = unavailable(nil, "mcpd is shutting down")

// ErrShuttingDown is the error of calls after (or during) daemon shutdown;
// it matches ErrUnavailable too.
var ErrShuttingDown = errShuttingDown

// unknownServer wraps ErrUnknownServer with the name.
func unknownServer(name string) error {
	return &UnknownServerError{Name: name}
}

// stderrTail formats the last n stderr lines of ring for an error message,
// or "" when there are none. Consecutive repeats of a line are collapsed as
// "line (×3)", so a child that prints the same line on every crash leaves
// room for the lines before it.
func stderrTail(ring *transport.Ring, n int) string {
	groups := collapseRepeats(ring.Last(n * 4))
	if len(groups) == 0 {
		return ""
	}
	if len(groups) > n {
		groups = groups[len(groups)-n:]
	}
	return stderrLines(groups)
}

// stderrLines is the end of an error message quoting stderr, one line
// each (mcpdctl's status shows the first in its LAST ERROR cell).
func stderrLines(lines []string) string {
	return "; last stderr lines:\n  " + strings.Join(lines, "\n  ")
}

// startScan bounds how many of the ring's last lines runStderr looks
// through for one run's.
const startScan = 200

// runStderr formats, for the error of a start that failed, the stderr
// lines of that run (process pid), or stderrTail's when it printed none. A
// server that exits at once usually says why first, then perhaps a usage
// text: with more than n lines, the first two are kept with the last n-2.
func runStderr(ring *transport.Ring, pid, n int) string {
	var lines []transport.Line
	for _, l := range ring.Last(startScan) {
		if l.Pid == pid {
			lines = append(lines, l)
		}
	}
	groups := collapseRepeats(lines)
	if len(groups) == 0 || n < 3 {
		return stderrTail(ring, n)
	}
	if len(groups) > n {
		kept := append([]string(nil), groups[:2]...)
		kept = append(kept, fmt.Sprintf("… (%d more)", len(groups)-n))
		groups = append(kept, groups[len(groups)-(n-2):]...)
	}
	return stderrLines(groups)
}

// collapseRepeats returns the texts of lines, each run of one text written
// once, with " (×N)" after it when it repeats.
func collapseRepeats(lines []transport.Line) []string {
	var out []string
	for i := 0; i < len(lines); {
		j := i + 1
		for j < len(lines) && lines[j].Text == lines[i].Text {
			j++
		}
		text := lines[i].Text
		if j-i > 1 {
			text += fmt.Sprintf(" (×%d)", j-i)
		}
		out = append(out, text)
		i = j
	}
	return out
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
