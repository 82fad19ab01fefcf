package transport

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"syscall"
)

// ErrCannotStart is wrapped by every spawn failure that trying again would
// only repeat: the command does not exist or cannot be executed (these also
// wrap ErrCommandNotFound), the working directory is missing, the command or
// an argument holds a NUL byte, or the argv and environment are too long for
// exec. Such a server is not crash-looping: it never ran.
var ErrCannotStart = errors.New("transport: cannot start")

// startFailure is a spawn failure that matches ErrCannotStart; its message
// says which server cannot start and why, in one line.
type startFailure struct {
	name string
	err  error
}

func (e *startFailure) Error() string {
	return fmt.Sprintf("server %q cannot start: %v", e.name, e.err)
}

// Is makes errors.Is(err, ErrCannotStart) true.
func (e *startFailure) Is(target error) bool { return target == ErrCannotStart }

func (e *startFailure) Unwrap() error { return e.err }

func cannotStart(name string, err error) error { return &startFailure{name: name, err: err} }

// checkSpawnable rejects what exec would refuse anyway, with a clearer
// message: an empty command, a NUL byte in the command or an argument, a
// working directory that does not exist or is no directory. With
// SysProcAttr set, exec reports a missing directory as the command's ENOENT,
// so it is checked here and not mistaken for a missing command.
func checkSpawnable(opts Options) error {
	if opts.Command == "" {
		return cannotStart(opts.Name, fmt.Errorf("empty command: %w", ErrCommandNotFound))
	}
	if strings.IndexByte(opts.Command, 0) >= 0 {
		return cannotStart(opts.Name, fmt.Errorf("command %q contains a NUL byte", opts.Command))
	}
	for i, a := range opts.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return cannotStart(opts.Name, fmt.Errorf("argument %d contains a NUL byte", i+1))
		}
	}
	if opts.Dir != "" {
		fi, err := os.Stat(opts.Dir)
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return cannotStart(opts.Name, fmt.Errorf("chdir %s: %w", opts.Dir, err))
		}
		if !fi.IsDir() {
			return cannotStart(opts.Name, fmt.Errorf("chdir %s: %w", opts.Dir, syscall.ENOTDIR))
		}
	}
	return nil
}

// startError classifies a failure of exec.Cmd.Start. Failures of the
// command itself are permanent (ErrCannotStart); a shortage of processes,
// memory or descriptors is not, and is returned as it is.
func startError(opts Options, err error) error {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, exec.ErrDot) ||
		errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, syscall.ENOEXEC) || errors.Is(err, syscall.EISDIR) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
		return cannotStart(opts.Name, fmt.Errorf("command %q: %w: %w", opts.Command, ErrCommandNotFound, err))
	}
	for _, errno := range []syscall.Errno{syscall.E2BIG, syscall.EINVAL, syscall.ENAMETOOLONG, syscall.ETXTBSY} {
		if errors.Is(err, errno) {
			return cannotStart(opts.Name, err)
		}
	}
	return fmt.Errorf("start %q: %w", opts.Name, err)
}
