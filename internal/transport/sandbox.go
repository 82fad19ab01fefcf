package transport

import (
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/procs"
	"github.com/mcpd-dev/mcpd/internal/sandbox"
)

// LimitExitError is the exit of a child that the kernel killed at a limit
// of its sandbox; its message is the exit reason status shows.
type LimitExitError struct {
	// Reason is e.g. "killed: memory limit 256 MiB".
	Reason string
	// Err is how the process exited (an *exec.ExitError).
	Err error
}

func (e *LimitExitError) Error() string { return e.Reason }
func (e *LimitExitError) Unwrap() error { return e.Err }

// sandboxStart is how a sandboxed child is started.
type sandboxStart struct {
	command string   // the helper (or the server itself when there is none)
	args    []string // the helper's arguments
	env     []string
	limits  procs.Limits
	summary string // for Process.Sandbox
}

// prepareSandbox makes the plan of a sandboxed start. A policy that
// cannot be honoured fails with ErrCannotStart, unless it is best effort:
// then what is missing is logged and left out.
func prepareSandbox(opts Options, env []string, log *zap.Logger) (*sandboxStart, error) {
	path, err := exec.LookPath(opts.Command)
	if err != nil {
		return nil, startError(opts, err)
	}
	if path, err = filepath.Abs(path); err != nil {
		return nil, startError(opts, err)
	}
	plan, err := sandbox.Prepare(*opts.Sandbox, sandbox.Target{
		Name: opts.Name, Path: path, Args: opts.Args, Dir: opts.Dir, Env: env,
	})
	if err != nil {
		return nil, cannotStart(opts.Name, err)
	}
	log = log.With(zap.String("server", opts.Name))
	for _, m := range plan.Missing {
		log.Warn("sandbox path does not exist; left out", zap.String("path", m))
	}
	lim := procs.Limits{Memory: plan.Limits.Memory, Pids: plan.Limits.Pids, CPU: plan.Limits.CPU}
	cgNote := ""
	if err := opts.Keeper.CheckLimits(lim); err != nil {
		if !plan.BestEffort {
			return nil, cannotStart(opts.Name, fmt.Errorf("sandbox cannot be honoured: %w (set \"bestEffort\": true to run without the limits)", err))
		}
		cgNote = fmt.Sprintf("memory/pids/cpu limits: %v", errors.Unwrap(err))
		lim = procs.Limits{}
		plan.Limits.Memory, plan.Limits.Pids, plan.Limits.CPU = 0, 0, 0
	}
	st := &sandboxStart{command: path, args: opts.Args, env: env, limits: lim, summary: plan.Summary(cgNote)}
	if len(plan.Unmet) > 0 || cgNote != "" {
		log.Warn("sandbox is best effort: part of it is not applied", zap.String("sandbox", st.summary))
	} else {
		log.Info("sandboxed", zap.String("sandbox", st.summary))
	}
	if !sandbox.Supported {
		return st, nil // best effort on a platform without the helper
	}
	helper, add, err := plan.Wrap()
	if err != nil {
		return nil, cannotStart(opts.Name, err)
	}
	st.command, st.args, st.env = helper, nil, append(env, add...)
	return st, nil
}

// limitExit turns the exit of a child the kernel killed at its memory
// limit into a LimitExitError.
func (p *Process) limitExit(err error) error {
	if err == nil || p.memLimit == 0 || !p.group.MemoryKilled() {
		return err
	}
	return &LimitExitError{Reason: "killed: memory limit " + sandbox.FormatBytes(p.memLimit), Err: err}
}

// Sandbox says how the child is confined ("" when it has no sandbox), and
// what of its sandbox best effort left out.
func (p *Process) Sandbox() string { return p.sandbox }
