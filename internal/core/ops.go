package core

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// This file serves the operator RPCs of the daemon itself: ReloadConfig and
// CheckConfig (through the hooks cmd/mcpd installs with SetConfigOps, so
// that every reload goes through the daemon's one reload function) and
// FollowLogs (a server's stderr ring, or mcpd's own log ring).

// ConfigProblem is one problem in a config file, as the config package
// reports it (cmd/mcpd converts; the service does not import the config package).
type ConfigProblem struct {
	Path         string
	Line, Column int
	Server, Key  string
	Message      string
}

// ConfigOutcome is the result of a config reload or check.
type ConfigOutcome struct {
	// Path is the config file.
	Path string
	// Err is why the config cannot be used (nil when it can); Problems
	// details it when it is the config's fault.
	Err      error
	Problems []ConfigProblem
	// Diff is what the reload changed (Reload) or would change (Check).
	Diff supervisor.ApplyResult
	// Profiles is what it did or would do to the profiles.
	Profiles ProfileChanges
}

// ProfileChanges names the profiles a reload adds, removes and changes.
type ProfileChanges struct {
	Added, Removed, Changed []string
}

// ConfigOps are the daemon's config operations; either may be nil.
type ConfigOps struct {
	// Reload re-reads the config file and applies it, exactly as SIGHUP
	// does, and returns once it is applied (or rejected).
	Reload func(ctx context.Context) ConfigOutcome
	// Check validates content as the file at path (the daemon's config
	// file when path is empty; read from disk when content is nil) and
	// diffs it against the running servers without applying it.
	Check func(ctx context.Context, path string, content []byte) ConfigOutcome
}

// opsState is the Service's part for this file; guarded by Service.mu.
type opsState struct {
	config    ConfigOps
	daemonLog *transport.Ring
}

// SetConfigOps installs the daemon's config operations.
func (s *Service) SetConfigOps(ops ConfigOps) {
	s.mu.Lock()
	s.ops.config = ops
	s.mu.Unlock()
}

// SetDaemonLog sets the ring of mcpd's own log lines that FollowLogs with
// an empty name serves.
func (s *Service) SetDaemonLog(r *transport.Ring) {
	s.mu.Lock()
	s.ops.daemonLog = r
	s.mu.Unlock()
}

// ConfigOps are the daemon's config operations (SetConfigOps).
func (s *Service) ConfigOps() ConfigOps { return s.opsSnapshot().config }

func (s *Service) opsSnapshot() opsState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops
}

// logFollower is the part of the supervisor FollowLogs needs; test fakes of
// backend need not implement it.
type logFollower interface {
	FollowLogs(name string, n int) ([]transport.Line, <-chan transport.Line, func() int64, error)
}

var _ logFollower = (*supervisor.Supervisor)(nil)

// FollowLogs serves a log follow, sending each line with send; opened
// (nil: none) is called once the log is followed, before the first line.
func (s *Service) FollowLogs(ctx context.Context, f service.LogFollow, opened func(), send func(service.LogLine) error) error {
	n := f.Lines
	switch {
	case n < 0:
		return codeError(service.InvalidArgument, "lines must not be negative, got %d", n)
	case n == 0:
		n = DefaultLogLines
	case n > MaxLogLines:
		n = MaxLogLines
	}
	var (
		backlog []transport.Line
		lines   <-chan transport.Line
		cancel  func() int64
	)
	if f.Server == "" {
		ring := s.opsSnapshot().daemonLog
		if ring == nil {
			return codeError(service.Unimplemented, "this mcpd keeps no log of its own")
		}
		backlog, lines, cancel = ring.Follow(n)
	} else {
		lf, ok := s.sup.(logFollower)
		if !ok {
			return codeError(service.Unimplemented, "following logs is not supported")
		}
		var err error
		backlog, lines, cancel, err = lf.FollowLogs(f.Server, n)
		if err != nil {
			return ToError(err)
		}
	}
	defer cancel()
	if opened != nil {
		opened()
	}
	for _, l := range backlog {
		if err := send(logLineOf(l)); err != nil {
			return nil // the app went away
		}
	}
	for {
		select {
		case <-ctx.Done():
			s.log.Debug("follow logs ended by the client", zap.String("server", f.Server))
			return nil
		case l, ok := <-lines:
			if !ok {
				if name := f.Server; name != "" && !slices.Contains(s.sup.Names(), name) {
					return classError(service.UnknownServer, map[string]string{service.MetaServer: name}, fmt.Sprintf("server %q was removed from the config", name))
				}
				return nil
			}
			if err := send(logLineOf(l)); err != nil {
				return nil
			}
		}
	}
}
