// Package transport owns one MCP server child process and its stdio: spawn in
// its own process group, newline-delimited JSON-RPC framing on stdout/stdin,
// a continuously drained stderr kept in a ring, and the MCP stdio stop
// sequence (close stdin, SIGTERM the group, SIGKILL the group).
package transport

import (
	"errors"
	"time"

	"go.uber.org/zap"
)

// Defaults used when the matching Options field is zero.
const (
	DefaultMaxLineSize   = 32 << 20
	DefaultShutdownGrace = 2 * time.Second
)

var (
	// ErrClosed is returned by WriteMessage after stdin was closed or the
	// process exited.
	ErrClosed = errors.New("transport: stdin closed")
	// ErrCommandNotFound wraps a spawn failure because the command does not
	// exist or is not executable.
	ErrCommandNotFound = errors.New("transport: command not found")
)

// Options configure one child process.
type Options struct {
	// Name is the server name, used in errors and logs.
	Name    string
	Command string
	Args    []string
	// Env is the complete environment of the child. If nil, mcpd's own
	// environment is used. NOTIFY_SOCKET, LISTEN_FDS, LISTEN_PID and
	// LISTEN_FDNAMES are always removed.
	Env []string
	// Dir is the working directory; empty means mcpd's.
	Dir string
	// MaxLineSize caps one stdout line. If zero, DefaultMaxLineSize is used.
	MaxLineSize int
	// ShutdownGrace is each wait of the stop sequence. If zero,
	// DefaultShutdownGrace is used.
	ShutdownGrace time.Duration
	// Stderr receives the child's stderr lines; nil discards them (they are
	// still drained).
	Stderr *Ring
	// Logger may be nil.
	Logger *zap.Logger
}

// Stats are counters of one process's stdout stream.
type Stats struct {
	// LinesSkipped counts lines that were not a JSON object.
	LinesSkipped int64
	// LinesOversize counts lines longer than MaxLineSize (discarded).
	LinesOversize int64
}

// Process is one running child. ReadMessage must be called from a single
// goroutine; every other method is safe for concurrent use.
type Process struct{}

// Start spawns the child described by opts.
func Start(opts Options) (*Process, error) { panic("unimplemented") }

// Pid returns the child's process id (also its process group id).
func (p *Process) Pid() int { panic("unimplemented") }

// ReadMessage returns the next JSON object line from the child's stdout,
// without its line ending. Lines that are not JSON objects and oversize
// lines are skipped and counted. It returns io.EOF when stdout is closed.
// The returned slice is owned by the caller.
func (p *Process) ReadMessage() ([]byte, error) { panic("unimplemented") }

// WriteMessage writes msg (one compact JSON value, no newline) followed by
// "\n" to the child's stdin. It returns an error wrapping ErrClosed once stdin
// is closed; a broken pipe is reported as ErrClosed too.
func (p *Process) WriteMessage(msg []byte) error { panic("unimplemented") }

// Stop runs the stop sequence: close stdin, wait ShutdownGrace, SIGTERM the
// process group, wait ShutdownGrace, SIGKILL the group, reap. It returns once
// the child has been reaped. Stop is idempotent and safe to call concurrently.
func (p *Process) Stop() error { panic("unimplemented") }

// Kill sends SIGKILL to the process group at once and returns without waiting.
func (p *Process) Kill() { panic("unimplemented") }

// Done is closed once the child has exited, been reaped, and stderr drained.
func (p *Process) Done() <-chan struct{} { panic("unimplemented") }

// ExitError returns how the child exited (nil for exit status 0); valid after Done.
func (p *Process) ExitError() error { panic("unimplemented") }

// Stopping reports whether Stop was called (an exit is then expected).
func (p *Process) Stopping() bool { panic("unimplemented") }

// Stats returns the stdout counters.
func (p *Process) Stats() Stats { panic("unimplemented") }

// Line is one stderr line of a child.
type Line struct {
	Time      time.Time
	Text      string
	Truncated bool
	Pid       int
}

// Ring keeps the most recent stderr lines of one server across restarts,
// bounded by line count and bytes. It is safe for concurrent use.
type Ring struct{}

// NewRing returns a ring holding at most maxLines lines and maxBytes bytes of
// text. Zero values mean 1000 lines and 1 MiB.
func NewRing(maxLines, maxBytes int) *Ring { panic("unimplemented") }

// Add appends a line, evicting the oldest ones beyond the bounds.
func (r *Ring) Add(l Line) { panic("unimplemented") }

// Last returns up to n most recent lines, oldest first.
func (r *Ring) Last(n int) []Line { panic("unimplemented") }
