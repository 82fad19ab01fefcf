package transport

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/procs"
	"github.com/mcpd-dev/mcpd/internal/rawio"
	"github.com/mcpd-dev/mcpd/internal/sandbox"
)

// Defaults used when the matching Options field is zero.
const (
	DefaultMaxLineSize   = 32 << 20
	DefaultShutdownGrace = 2 * time.Second
)

// Bounds of the stderr drain.
const (
	// StderrReadSize is the size of one read from the child's stderr.
	StderrReadSize = 8 << 10
	// MaxStderrLine caps one stderr line in bytes. The rest of a longer line
	// is discarded and the kept part is marked Truncated.
	MaxStderrLine = 64 << 10
)

// stdoutBufferSize is the bufio buffer on stdout. Lines that fit are copied
// once into the returned slice; longer lines are assembled in their own
// growing slice, bounded by MaxLineSize.
const stdoutBufferSize = 64 << 10

var (
	// ErrClosed is returned by WriteMessage after stdin was closed or the
	// process exited.
	ErrClosed = errors.New("transport: stdin closed")
	// ErrCommandNotFound wraps a spawn failure because the command does not
	// exist or is not executable.
	ErrCommandNotFound = errors.New("transport: command not found")
)

// droppedEnv are removed from every child's environment: they describe
// mcpd's own systemd context (notify socket, activated sockets) and would
// make a child talk to systemd or grab mcpd's listening fd.
var droppedEnv = []string{"NOTIFY_SOCKET", "LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"}

// Options configure one child process.
type Options struct {
	// Name is the server name, used in errors and logs.
	Name    string
	Command string
	Args    []string
	// LogArgs, if not nil, is what the debug log shows for Args: the
	// config's form, with ${secret:NAME} where Args hold the values.
	LogArgs []string
	// Env is the complete environment of the child. If nil, mcpd's own
	// environment is used. NOTIFY_SOCKET, LISTEN_FDS, LISTEN_PID and
	// LISTEN_FDNAMES are always removed.
	Env []string
	// Dir is the working directory; empty means mcpd's.
	Dir string
	// MaxLineSize caps one stdout line. If zero, DefaultMaxLineSize is used.
	MaxLineSize int
	// ShutdownGrace is each wait of the stop sequence. If zero,
	// DefaultShutdownGrace is used. It also bounds how long, after the child
	// exited, Done waits for stdout and stderr to reach EOF (see Done).
	ShutdownGrace time.Duration
	// StdinTimeout is how long the child may leave its stdin full (read
	// nothing of what mcpd has to send) before it is considered hung and
	// killed (see WriteMessage). If zero, DefaultStdinTimeout is used.
	StdinTimeout time.Duration
	// Stderr receives the child's stderr lines; nil discards them (they are
	// still drained).
	Stderr *Ring
	// Logger may be nil.
	Logger *zap.Logger
	// Keeper, if set, starts the child in a cgroup of its own when it can
	// and tracks the processes that leave its process group, so that they
	// are killed with it (internal/procs). Nil: the process group only.
	Keeper *procs.Keeper
	// Sandbox, if set, confines the child (internal/sandbox): Landlock and
	// rlimits applied by mcpd's helper before it execs the command, cgroup
	// limits by the Keeper.
	Sandbox *sandbox.Policy
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
//
// The child's stdin, stdout and stderr are os.Pipe pairs created here rather
// than cmd.StdinPipe/StdoutPipe/StderrPipe: exec.Cmd.Wait closes the pipes it
// created as soon as the process exits, so with those a reader racing Wait
// can lose the last lines the child wrote (typically the error that explains
// its exit), and Wait must not even be called before reading is done. With
// our own pipes, cmd.Wait only reaps, and reading runs independently of it:
// ReadMessage returns everything the child wrote, then io.EOF, then closes
// stdout. A read deadline of ShutdownGrace after the exit (the equivalent of
// cmd.WaitDelay for pipes we own) ends reading even if a process that
// escaped the group still holds the pipes.
//
// The caller is expected to call ReadMessage until it returns an error;
// otherwise stdout is only closed when the Process is garbage collected.
type Process struct {
	name  string
	pid   int
	cmd   *exec.Cmd
	group *procs.Group // the child's cgroup or tracked descendants; nil without a keeper
	log   *zap.Logger
	ring  *Ring
	grace time.Duration
	// sandbox is Sandbox's summary; memLimit the cgroup's memory.max.
	sandbox  string
	memLimit int64

	maxLine int

	// Reader side; used only by the goroutine calling ReadMessage, which
	// also closes stdoutR at EOF. The waiter only sets a read deadline.
	stdoutR *os.File
	rd      *bufio.Reader
	readErr error // sticky: once set, ReadMessage returns it
	// onOversize is set by OnOversize before reading starts.
	onOversize func(OversizeLine)

	stderrR    *os.File
	stderrDone chan struct{}  // closed by the stderr drain when it returns
	stderrLog  stderrLogLimit // the drain's own: how much of stderr it logs

	w writer // the write side (write.go)

	stdinW      *os.File
	stdinClosed atomic.Bool
	stdinOnce   sync.Once

	sigMu sync.Mutex // guards exited; held while signalling the group
	// exited is set (with the group already SIGKILLed) while the child is a
	// zombie or right after it was reaped, before its pid can be reused;
	// signals are never sent once it is set.
	exited   bool
	exitedCh chan struct{} // closed when exited is set

	stopOnce sync.Once
	stopping atomic.Bool
	stopErr  error // written inside stopOnce

	done    chan struct{}
	exitErr error // written before done is closed

	skipped  atomic.Int64
	oversize atomic.Int64
}

// Start spawns the child described by opts.
//
// The command is run directly from its argv (never through a shell), in its
// own process group, with SIGKILL as parent-death signal so that a killed
// mcpd leaves no orphan. If the command cannot be started at all, the
// error wraps ErrCannotStart and names the server and the cause; if it does
// not exist or is not executable, it also wraps ErrCommandNotFound and names
// the command.
func Start(opts Options) (*Process, error) {
	if err := platformSupported(); err != nil {
		return nil, fmt.Errorf("start %q: %w", opts.Name, err)
	}
	if err := checkSpawnable(opts); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	maxLine := opts.MaxLineSize
	if maxLine <= 0 {
		maxLine = DefaultMaxLineSize
	}
	grace := opts.ShutdownGrace
	if grace <= 0 {
		grace = DefaultShutdownGrace
	}
	l := launch{command: opts.Command, args: opts.Args, env: childEnv(opts.Env), grace: grace}
	if opts.Sandbox != nil {
		var err error
		if l.sb, err = prepareSandbox(opts, l.env, log); err != nil {
			return nil, err
		}
		l.command, l.args, l.env = l.sb.command, l.sb.args, l.sb.env
	}

	stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW, err := stdioPipes(opts.Name)
	if err != nil {
		return nil, err
	}
	parentEnds := []*os.File{stdinW, stdoutR, stderrR}
	cmd, group, err := l.spawn(opts, stdinR, stdoutW, stderrW)
	if err != nil {
		closeAll(parentEnds)
		return nil, err
	}

	pid := cmd.Process.Pid
	p := &Process{
		name:       opts.Name,
		pid:        pid,
		cmd:        cmd,
		group:      group,
		log:        log.With(zap.String("server", opts.Name), zap.Int("pid", pid)),
		ring:       opts.Stderr,
		grace:      grace,
		maxLine:    maxLine,
		stdoutR:    stdoutR,
		rd:         bufio.NewReaderSize(stdoutReader(stdoutR), stdoutBufferSize),
		stderrR:    stderrR,
		stderrDone: make(chan struct{}),
		stdinW:     stdinW,
		exitedCh:   make(chan struct{}),
		done:       make(chan struct{}),
	}
	if l.sb != nil {
		p.sandbox, p.memLimit = l.sb.summary, l.sb.limits.Memory
	}
	if err := p.initWriter(opts.StdinTimeout); err != nil {
		// Not expected for an os.Pipe; the child must not be left behind.
		p.Kill()
		group.Kill()
		_ = cmd.Wait()
		group.Close(grace)
		closeAll(parentEnds)
		return nil, err
	}
	logArgs := opts.Args
	if opts.LogArgs != nil {
		logArgs = opts.LogArgs
	}
	p.log.Debug("child started", zap.String("command", opts.Command), zap.Strings("args", logArgs))
	go p.drainStderr()
	go p.wait()
	return p, nil
}

// launch is what a child is started as: the command line and environment
// (the sandbox helper's when sb is set), and the grace of its stop.
type launch struct {
	command string
	args    []string
	env     []string
	sb      *sandboxStart // nil: no sandbox
	grace   time.Duration
}

// spawn starts the child on the given pipe ends through opts.Keeper and
// closes those ends (the child has its copies; ours must go, or stdout and
// stderr would never reach EOF and stdin would never be seen closed).
func (l *launch) spawn(opts Options, stdinR, stdoutW, stderrW *os.File) (*exec.Cmd, *procs.Group, error) {
	newCmd := func() *exec.Cmd {
		cmd := exec.Command(l.command, l.args...)
		cmd.Env = l.env
		cmd.Dir = opts.Dir
		cmd.SysProcAttr = sysProcAttr()
		// All three stdio streams are *os.File, so Wait starts no copying
		// goroutines and WaitDelay only matters for a future change to
		// that; the same bound is applied to our own pipes by the waiter.
		cmd.WaitDelay = l.grace
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdinR, stdoutW, stderrW
		return cmd
	}
	// The keeper (nil: none) puts the child in its own cgroup when it can
	// and tracks the processes that leave the group (internal/procs).
	var cmd *exec.Cmd
	var group *procs.Group
	var err error
	if l.sb != nil {
		cmd, group, err = opts.Keeper.StartLimited(opts.Name, l.sb.limits, newCmd)
	} else {
		cmd, group, err = opts.Keeper.Start(opts.Name, newCmd)
	}
	closeAll([]*os.File{stdinR, stdoutW, stderrW})
	if err != nil {
		if errors.Is(err, procs.ErrLimits) {
			return nil, nil, cannotStart(opts.Name, fmt.Errorf("sandbox: %w", err))
		}
		return nil, nil, startError(opts, err)
	}
	return cmd, group, nil
}

// stdioPipes creates the child's stdin, stdout and stderr pipes; on error
// none is left open.
func stdioPipes(name string) (stdinR, stdinW, stdoutR, stdoutW, stderrR, stderrW *os.File, err error) {
	var made []*os.File
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err != nil {
			closeAll(made)
			return nil, nil, fmt.Errorf("start %q: pipe: %w", name, err)
		}
		made = append(made, r, w)
		return r, w, nil
	}
	if stdinR, stdinW, err = pipe(); err != nil {
		return
	}
	if stdoutR, stdoutW, err = pipe(); err != nil {
		return
	}
	stderrR, stderrW, err = pipe()
	return
}

// closeAll closes every file of fs.
func closeAll(fs []*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// childEnv returns env (or mcpd's environment when nil) without droppedEnv.
// The result is never nil, so an empty env really means an empty one.
func childEnv(env []string) []string {
	if env == nil {
		env = os.Environ()
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		key, _, _ := strings.Cut(kv, "=")
		if slices.Contains(droppedEnv, key) {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// wait is the waiter goroutine: it learns of the child's exit, kills what is
// left of the process group, reaps, closes stdin, bounds further reading of
// stdout and stderr by a deadline, waits for the stderr drain, then closes
// done.
func (p *Process) wait() {
	var err error
	if werr := waitExited(p.pid); werr == nil {
		// The child is a zombie: its pid (and so the group id) cannot be
		// reused yet, so killing the group now cannot hit a stranger.
		p.markExited()
		err = p.cmd.Wait()
	} else {
		// No waitid(WNOWAIT) here (or it failed): reap first, then kill the
		// group, which at worst signals a group that is already empty.
		err = p.cmd.Wait()
		p.markExited()
	}
	p.closeStdin()
	// A finisher of a half-written message (write.go) ends with stdin.
	p.stopFinishers()
	err = p.limitExit(err)
	// Reaped: the cgroup (its processes were killed with the group) and
	// the record of the child go; after stdin, so that waiting for the
	// cgroup to empty holds up no writer.
	p.group.Close(p.grace)

	// Like cmd.WaitDelay for the pipes we own: a process outside the group
	// that still holds stdout or stderr must not keep them open for ever.
	// Past the deadline a pending Read fails with os.ErrDeadlineExceeded,
	// which the stderr drain and ReadMessage treat as EOF.
	deadline := time.Now().Add(p.grace)
	_ = p.stderrR.SetReadDeadline(deadline)
	_ = p.stdoutR.SetReadDeadline(deadline)
	<-p.stderrDone
	_ = p.stderrR.Close()

	if err != nil {
		p.log.Debug("child exited", zap.Error(err))
	} else {
		p.log.Debug("child exited")
	}
	p.exitErr = err
	close(p.done)
}

// markExited kills the rest of the process group and stops further signals.
func (p *Process) markExited() {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	// Grandchildren (of npx, uvx, sh -c) must not outlive the child.
	if err := signalGroup(p.pid, syscall.SIGKILL); err != nil {
		p.log.Warn("kill process group after exit", zap.Error(err))
	}
	// And so must those that left the group (setsid): the whole cgroup, or
	// the descendants found in /proc.
	p.group.Kill()
	p.exited = true
	close(p.exitedCh)
}

// signal sends sig to the process group unless the child has exited.
func (p *Process) signal(sig syscall.Signal) error {
	p.sigMu.Lock()
	defer p.sigMu.Unlock()
	if p.exited {
		return nil
	}
	if err := signalGroup(p.pid, sig); err != nil {
		return fmt.Errorf("signal %q group %d with %v: %w", p.name, p.pid, sig, err)
	}
	return nil
}

// closeStdin closes the write end of the child's stdin once.
func (p *Process) closeStdin() {
	p.stdinOnce.Do(func() {
		p.stdinClosed.Store(true)
		// Not under the write lock: closing ends a write waiting for room
		// in a full pipe.
		_ = p.stdinW.Close()
	})
}

// Pid returns the child's process id (also its process group id).
func (p *Process) Pid() int { return p.pid }

// Done is closed once the child has exited, been reaped, and stderr drained.
// By then the rest of its process group has been killed and stdin is
// closed. If stderr is still open ShutdownGrace after the exit (a process
// outside the group holds it), draining stops there. Done does not wait for
// the stdout reader.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitError returns how the child exited (nil for exit status 0); valid after
// Done, nil before. A non-nil error is usually an *exec.ExitError.
func (p *Process) ExitError() error {
	select {
	case <-p.done:
		return p.exitErr
	default:
		return nil
	}
}

// Stopping reports whether Stop was called (an exit is then expected).
func (p *Process) Stopping() bool { return p.stopping.Load() }

// Stats returns the stdout counters.
func (p *Process) Stats() Stats {
	return Stats{LinesSkipped: p.skipped.Load(), LinesOversize: p.oversize.Load()}
}

// stdoutReader reads the child's stdout with raw system calls (package
// rawio), or as an os.File should its RawConn be unavailable.
func stdoutReader(f *os.File) io.Reader {
	if r, err := rawio.NewReader(f); err == nil {
		return r
	}
	return f
}
