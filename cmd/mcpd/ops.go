package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// reloadRequest asks the reload actor to reload (mcpdctl reload); the
// outcome comes back on reply (capacity 1).
type reloadRequest struct {
	reply chan core.ConfigOutcome
}

// requestReload sends a reload request to the reload actor and waits for
// its outcome; it is the service's ConfigOps.Reload.
func requestReload(ctx context.Context, reqc chan<- reloadRequest) core.ConfigOutcome {
	req := reloadRequest{reply: make(chan core.ConfigOutcome, 1)}
	select {
	case reqc <- req:
	case <-ctx.Done():
		return core.ConfigOutcome{Err: fmt.Errorf("reload: %w", ctx.Err())}
	}
	select {
	case out := <-req.reply:
		return out
	case <-ctx.Done():
		return core.ConfigOutcome{Err: fmt.Errorf("reload: %w", ctx.Err())}
	}
}

// checkConfig parses content (or the file at path, read with the bounds of
// config.ReadFile) in mcpd's environment and diffs it against the running
// servers, applying nothing.
func checkConfig(ctx context.Context, sup *supervisor.Supervisor, srv *core.Service, defaultPath, path string, content []byte) core.ConfigOutcome {
	if path == "" {
		path = defaultPath
	}
	var (
		cfg *config.Config
		err error
	)
	if content == nil {
		cfg, err = loadConfig(ctx, path)
	} else if cfg, err = config.Parse(path, content); err == nil {
		cfg.CheckCommands()
	}
	if err != nil {
		return outcome(path, err)
	}
	out := core.ConfigOutcome{Path: path, Diff: sup.Diff(specs(cfg)), Profiles: srv.ProfileChangesTo(cfg.Profiles), Problems: problems(cfg.Problems)}
	if n := len(cfg.Problems); n > 0 {
		out.Err = fmt.Errorf("%s: %d problem(s) in %d of %d servers", path, n, len(cfg.Servers)-len(cfg.Valid()), len(cfg.Servers))
	}
	return out
}

// loadConfig loads the config file and looks up its servers' commands.
func loadConfig(ctx context.Context, path string) (*config.Config, error) {
	cfg, err := config.Load(ctx, path)
	if err != nil {
		return nil, err
	}
	cfg.CheckCommands()
	return cfg, nil
}

// logProblems logs each server's config problems; the server itself shows
// them as its state (failed) and last error.
func logProblems(log *zap.Logger, cfg *config.Config) {
	for _, p := range cfg.Problems {
		log.Error("server config invalid; it is failed, the others run", zap.String("server", p.Server), zap.Error(p))
	}
}

// outcome is the service's form of a config error.
func outcome(path string, err error) core.ConfigOutcome {
	out := core.ConfigOutcome{Path: path, Err: err}
	for _, e := range unjoin(err) {
		var ce *config.Error
		if errors.As(e, &ce) {
			out.Problems = append(out.Problems, problems([]*config.Error{ce})...)
		}
	}
	return out
}

// problems is the service's form of config problems.
func problems(errs []*config.Error) []core.ConfigProblem {
	var out []core.ConfigProblem
	for _, ce := range errs {
		out = append(out, core.ConfigProblem{
			Path: ce.Path, Line: ce.Line, Column: ce.Column, Server: ce.Server, Key: ce.Key, Message: ce.Msg,
		})
	}
	return out
}

// unjoin splits an errors.Join error into its parts.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// daemonLogLines and daemonLogBytes bound the ring of mcpd's own log lines
// that "mcpdctl logs" (without a server name) serves.
const (
	daemonLogLines = 2000
	daemonLogBytes = 2 << 20
)

// teeToRing returns log writing also, as console-encoded lines, to ring,
// at the level log has.
func teeToRing(log *zap.Logger, ring *transport.Ring) *zap.Logger {
	enc := zap.NewDevelopmentEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	level := zapcore.LevelOf(log.Core())
	rc := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), ringSink{ring}, level)
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return zapcore.NewTee(c, rc) }))
}

// ringSink is a zapcore.WriteSyncer adding each encoded entry to a ring.
type ringSink struct{ ring *transport.Ring }

func (s ringSink) Write(p []byte) (int, error) {
	s.ring.Add(transport.Line{Time: time.Now(), Text: strings.TrimRight(string(p), "\n"), Pid: os.Getpid()})
	return len(p), nil
}

func (ringSink) Sync() error { return nil }
