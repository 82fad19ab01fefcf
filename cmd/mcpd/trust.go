package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/tracing"
)

// EnvXDGStateHome is consulted for the default state directory.
const EnvXDGStateHome = "XDG_STATE_HOME"

// stateDir is where mcpd keeps the pinned tool definitions and the audit
// log: --state-dir, else $XDG_STATE_HOME/mcpd (when absolute), else
// ~/.local/state/mcpd.
func stateDir(flagValue string) string {
	if flagValue != "" {
		if abs, err := filepath.Abs(flagValue); err == nil {
			return abs
		}
		return flagValue
	}
	if sh := os.Getenv(EnvXDGStateHome); filepath.IsAbs(sh) {
		return filepath.Join(sh, "mcpd")
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".local", "state", "mcpd")
}

// trust holds the pin book, audit log and tracer of the daemon.
type trust struct {
	dir    string // the state directory
	pins   *pin.Book
	tracer *tracing.Tracer
	tp     *sdktrace.TracerProvider

	mu    sync.Mutex // guards audit
	audit core.AuditOptions
}

// setupTrust opens the pins store and the audit log under dir as cfg says
// (nil: the defaults) and starts tracing when endpoint is set.
func setupTrust(dir string, cfg *config.Config, endpoint string, log *zap.Logger) (*trust, error) {
	t := &trust{dir: dir, pins: pin.NewBook(pin.NewStore(filepath.Join(dir, "pins")))}
	if ac := auditConfig(cfg); ac.Enabled {
		l, err := t.openAudit(ac)
		if err != nil {
			return nil, fmt.Errorf("%w (set \"audit\": {\"enabled\": false} or --state-dir to run without it)", err)
		}
		t.audit = core.AuditOptions{Log: l, Arguments: ac.Arguments}
		log.Debug("audit log open", zap.String("path", l.Path()))
	}
	if endpoint != "" {
		tp, err := tracing.NewOTLP(context.Background(), endpoint)
		if err != nil {
			t.close()
			return nil, err
		}
		t.tp, t.tracer = tp, tracing.New(tp)
		log.Info("tracing to OTLP endpoint", zap.String("endpoint", endpoint))
	}
	return t, nil
}

// auditConfig is cfg's "audit", or the defaults.
func auditConfig(cfg *config.Config) config.Audit {
	if cfg != nil && cfg.Audit != nil {
		return *cfg.Audit
	}
	return config.DefaultAudit()
}

func (t *trust) openAudit(ac config.Audit) (*audit.Log, error) {
	return audit.Open(filepath.Join(t.dir, audit.FileName), audit.Options{MaxSize: ac.MaxSize, Keep: ac.Keep})
}

// auditOptions are the audit settings for core.Options.
func (t *trust) auditOptions() core.AuditOptions {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.audit
}

// reloadAudit applies a reloaded config's "audit" to srv: the log opened
// or closed, its limits and whether it records arguments. A log that
// cannot be opened leaves the audit log off, with an error logged.
func (t *trust) reloadAudit(cfg *config.Config, srv *core.Service, log *zap.Logger) {
	ac := auditConfig(cfg)
	t.mu.Lock()
	defer t.mu.Unlock()
	old := t.audit.Log
	switch {
	case !ac.Enabled:
		t.audit = core.AuditOptions{}
	case old != nil:
		old.SetLimits(audit.Options{MaxSize: ac.MaxSize, Keep: ac.Keep})
		t.audit = core.AuditOptions{Log: old, Arguments: ac.Arguments}
	default:
		l, err := t.openAudit(ac)
		if err != nil {
			log.Error("audit log not opened after reload; it stays off", zap.Error(err))
			return
		}
		t.audit = core.AuditOptions{Log: l, Arguments: ac.Arguments}
		log.Info("audit log on", zap.String("path", l.Path()))
	}
	srv.SetAudit(t.audit)
	if old != nil && t.audit.Log == nil {
		_ = old.Close()
		log.Info("audit log off", zap.String("path", old.Path()))
	}
}

// apiTracer is the tracer for core.Options (nil interface when off).
func (t *trust) apiTracer() core.Tracer {
	if t.tracer == nil {
		return nil
	}
	return t.tracer
}

// close flushes the traces and closes the audit log.
func (t *trust) close() {
	if t.tp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = t.tp.Shutdown(ctx)
		cancel()
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.audit.Log != nil {
		_ = t.audit.Log.Close()
	}
}

// upstream is the supervisor's Upstream hook (nil when tracing is off).
func (t *trust) upstream() func(context.Context, string, *session.Request) (*session.Request, func(*session.Response, error)) {
	if t.tracer == nil {
		return nil
	}
	return t.tracer.Upstream
}
