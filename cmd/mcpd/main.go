// Command mcpd is the per-user daemon that supervises local MCP servers as
// child processes and serves them to local apps over gRPC on a Unix socket.
//
// main only parses flags, builds the logger and wires the components into
// one oklog/run group; the logic lives under internal/.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oklog/run"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/httpface"
	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/sandbox"
	"github.com/mcpd-dev/mcpd/internal/sdnotify"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/tracing"
	"github.com/mcpd-dev/mcpd/internal/transport"
	"github.com/mcpd-dev/mcpd/internal/version"
)

// grpcStopTimeout bounds GracefulStop: open streams (a long tool call, logs
// -f) would otherwise hold shutdown forever; after it, Stop cuts them.
const grpcStopTimeout = time.Second

const usage = `mcpd supervises local MCP servers and shares them with local apps over gRPC.

Usage:
  mcpd [flags]

mcpd runs in the foreground (systemd: "systemctl --user start mcpd"). It reads
the servers from a JSON config file in the "mcpServers" shape MCP hosts use
(VS Code's "servers", comments and trailing commas are accepted too):

  {"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"]}}}

Config file: --config, else $MCPD_CONFIG, else $XDG_CONFIG_HOME/mcpd/config.json,
else ~/.config/mcpd/config.json. Without one, mcpd runs with no servers; a
server with a problem (unset ${VAR}, missing command, bad key) is failed alone,
and a file that cannot be used at all leaves mcpd running with no servers,
the reason in "mcpdctl status".
Socket: --socket, else $MCPD_SOCKET, else $XDG_RUNTIME_DIR/mcpd/mcpd.sock, else
/tmp/mcpd-<uid>/mcpd.sock. Talk to mcpd with mcpdctl.
Processes: each server runs in a cgroup of its own where one can be made
(MCPD_CGROUPS=off keeps them in mcpd's); what a killed mcpd left behind is
recorded next to the socket and killed by the next mcpd on it.

Signals: SIGINT/SIGTERM stop every server and exit; SIGHUP re-reads the config
and applies only what changed, as saving the file and "mcpdctl reload" do.
systemd: READY=1/RELOADING=1/STOPPING=1 go to $NOTIFY_SOCKET; a socket passed
by socket activation (LISTEN_FDS=1) is used instead of --socket.
The config file is also watched: a saved change is applied without restarting
untouched servers; an invalid one is reported and the running config kept.

Metrics: with --metrics-listen, Prometheus metrics are served at /metrics on a
unix socket (unix:/path/to.sock, mode 0600) or a loopback address
(127.0.0.1:PORT, [::1]:PORT, localhost:PORT); other addresses are refused.
Off by default.

MCP hosts over HTTP: mcpd serves its MCP server for hosts over Streamable
HTTP at http://127.0.0.1:6273/mcp (every server) and /servers/NAME/mcp (one),
to this user only (every connection's peer uid is checked) and with Host and
Origin checked against DNS rebinding. --http-listen, else the config's
"httpListen", sets the address: a loopback HOST:PORT, unix:/path/to.sock or
off. If the default address is taken mcpd runs without it ("mcpdctl status"
says why); an address that was set and cannot be bound is an error.

Flags:
`

func main() {
	// A sandboxed server's start: apply its sandbox, exec it (never returns).
	sandbox.RunIfHelper()
	if err := runDaemon(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		printError(os.Stderr, err)
		os.Exit(1)
	}
}

// printError writes err with "mcpd: " before each of its lines (a config
// with several errors has one line each).
func printError(w io.Writer, err error) {
	for line := range strings.SplitSeq(err.Error(), "\n") {
		fmt.Fprintf(w, "mcpd: %s\n", line)
	}
}

// flags are mcpd's command-line settings.
type flags struct {
	config    string
	socket    string
	logLevel  string
	logFormat string
	version   bool
	// metricsListen is --metrics-listen (metrics.go); empty: off.
	metricsListen string
	// queueEvents and queueBytes bound each app's subscription queue.
	queueEvents int
	queueBytes  int
	// requestBudget bounds the bytes of the requests in flight.
	requestBudget int64
	// httpListen is --http-listen (http.go); empty: the config's
	// "httpListen", else httpface.DefaultAddr.
	httpListen string
	// stateDir is --state-dir (trust.go); empty: $XDG_STATE_HOME/mcpd.
	stateDir string
	// otlpEndpoint is --otlp-endpoint; empty: no traces.
	otlpEndpoint string
	// bridgeSocket is --bridge-socket (bridgeface.go).
	bridgeSocket bool
}

func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	var f flags
	set := flag.NewFlagSet("mcpd", flag.ContinueOnError)
	set.SetOutput(stderr)
	set.StringVar(&f.config, "config", "", "config `file` (default $MCPD_CONFIG or $XDG_CONFIG_HOME/mcpd/config.json)")
	set.StringVar(&f.socket, "socket", "", "API socket `path` (default $MCPD_SOCKET or $XDG_RUNTIME_DIR/mcpd/mcpd.sock)")
	set.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error")
	set.StringVar(&f.logFormat, "log-format", "json", "log `format` on stderr: json (for journald) or console")
	set.BoolVar(&f.version, "version", false, "print the version and exit")
	set.IntVar(&f.queueEvents, "subscription-queue-events", 1024, "events one app's subscription stream may queue before coalescing")
	set.IntVar(&f.queueBytes, "subscription-queue-bytes", 8<<20, "bytes one app's subscription stream may queue before coalescing")
	set.Int64Var(&f.requestBudget, "request-memory-budget", api.DefaultRequestMemoryBudget, "`bytes` all requests in flight may take together; past it a request is refused with RESOURCE_EXHAUSTED")
	set.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics at /metrics on `addr`: unix:/path/to.sock or a loopback HOST:PORT (default off)")
	set.StringVar(&f.httpListen, "http-listen", "", "serve MCP hosts over Streamable HTTP on `addr`: a loopback HOST:PORT, unix:/path/to.sock or off (default the config's \"httpListen\", else "+httpface.DefaultAddr+")")
	set.StringVar(&f.stateDir, "state-dir", "", "`dir` of the pinned tool definitions and the audit log (default $XDG_STATE_HOME/mcpd, else ~/.local/state/mcpd)")
	set.BoolVar(&f.bridgeSocket, "bridge-socket", true, "serve mcpdctl bridge on a socket beside the API socket (its name with -bridge.sock), running the bridge inside mcpd")
	set.StringVar(&f.otlpEndpoint, "otlp-endpoint", "", "export OpenTelemetry traces over OTLP/gRPC to this loopback `HOST:PORT` (default off)")
	set.Usage = func() {
		fmt.Fprint(set.Output(), usage)
		set.PrintDefaults()
	}
	if err := set.Parse(args); err != nil {
		return nil, err
	}
	if set.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (see mcpd --help)", set.Arg(0))
	}
	if f.queueEvents < 1 || f.queueBytes < 1 {
		return nil, fmt.Errorf("--subscription-queue-events and --subscription-queue-bytes must be positive")
	}
	if f.requestBudget < api.MaxRequestSize {
		return nil, fmt.Errorf("--request-memory-budget must be at least the largest request, %d bytes (32 MiB)", api.MaxRequestSize)
	}
	if f.metricsListen != "" {
		if _, err := parseMetricsListen(f.metricsListen); err != nil {
			return nil, err
		}
	}
	if f.otlpEndpoint != "" {
		if _, err := tracing.CheckEndpoint(f.otlpEndpoint); err != nil {
			return nil, fmt.Errorf("--otlp-endpoint: %w", err)
		}
	}
	if f.httpListen != "" && f.httpListen != httpface.Off {
		if _, err := httpface.ParseAddr(f.httpListen); err != nil {
			return nil, fmt.Errorf("--http-listen: %w", err)
		}
	}
	return &f, nil
}

// newLogger builds the one logger of the process, writing to stderr, with
// syslog priority prefixes when stderr is journald's stream (logger.go).
func newLogger(level, format string) (*zap.Logger, error) {
	cfg, err := loggerConfig(level, format)
	if err != nil {
		return nil, err
	}
	return buildLogger(cfg, zapcore.Lock(os.Stderr), journalStream(os.Stderr)), nil
}

// loggerConfig is the config of newLogger's logger, from --log-level and
// --log-format.
func loggerConfig(level, format string) (zap.Config, error) {
	lvl, err := zapcore.ParseLevel(level)
	if err != nil || lvl < zapcore.DebugLevel || lvl > zapcore.ErrorLevel {
		return zap.Config{}, fmt.Errorf("invalid --log-level %q: want debug, info, warn or error", level)
	}
	cfg := zap.NewProductionConfig()
	switch format {
	case "json":
		cfg.EncoderConfig.EncodeTime = zapcore.ISO8601TimeEncoder // not epoch seconds
	case "console":
		cfg.Encoding = "console"
		cfg.EncoderConfig = zap.NewDevelopmentEncoderConfig()
	default:
		return zap.Config{}, fmt.Errorf("invalid --log-format %q: want json or console", format)
	}
	cfg.Level = zap.NewAtomicLevelAt(lvl)
	cfg.Sampling = nil // lifecycle lines must never be dropped
	// An error line (a crash loop, a failed reload) is for an operator, who
	// needs its fields, not the Go stack that logged it.
	cfg.DisableStacktrace = true
	cfg.OutputPaths = []string{"stderr"}
	cfg.ErrorOutputPaths = []string{"stderr"}
	return cfg, nil
}

// runDaemon runs mcpd with the command-line args until a signal or a fatal
// error; a signal is a clean exit (nil).
func runDaemon(args []string, stdout, stderr io.Writer) error {
	f, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if f.version {
		fmt.Fprintf(stdout, "mcpd %s\n", version.Version)
		return nil
	}
	if stop, err := startCPUProfile(); err != nil {
		return err
	} else if stop != nil {
		defer stop()
	}

	// Signals are caught from the start, so that SIGTERM during startup is
	// a clean shutdown rather than the default death. SIGPIPE is caught
	// (not ignored) so that a write to a closed stdout or stderr returns
	// EPIPE instead of killing mcpd, while children, whose handlers exec
	// resets to the default, still get the usual SIGPIPE behaviour.
	stopc := make(chan os.Signal, 1)
	signal.Notify(stopc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(stopc)
	hupc := make(chan os.Signal, 1)
	signal.Notify(hupc, syscall.SIGHUP)
	defer signal.Stop(hupc)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)

	log, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	defer log.Sync()
	// mcpd's own recent log lines, for "mcpdctl logs" without a name (ops.go).
	daemonLog := transport.NewRing(daemonLogLines, daemonLogBytes)
	log = teeToRing(log, daemonLog)

	// Config.
	cfgPath := paths.ConfigPath(f.config)
	if abs, err := filepath.Abs(cfgPath); err == nil {
		cfgPath = abs // as status and the logs show it, whatever the cwd of who reads them
	}
	// The read is bounded (config.ReadTimeout) and a signal abandons it.
	loadCtx, loadDone := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cfg, err := loadConfig(loadCtx, cfgPath)
	interrupted := loadCtx.Err() != nil
	loadDone()
	var cfgErr error // why the config file cannot be used at all (status shows it)
	switch {
	case interrupted:
		log.Info("signal received while reading the config, stopping")
		return nil
	case errors.Is(err, fs.ErrNotExist):
		log.Info("no config file, running with no servers; create it with an \"mcpServers\" object to add some",
			zap.String("config_path", cfgPath))
		cfg = nil
	case err != nil:
		// Not fatal: mcpd serves no servers until the file is fixed (the
		// watcher, SIGHUP or mcpdctl reload picks the fix up).
		log.Error("config file unusable, running with no servers until it is fixed",
			zap.String("config_path", cfgPath), zap.Error(err))
		cfg, cfgErr = nil, err
	default:
		logProblems(log, cfg) // each server's, for its own status
	}

	// Socket: systemd's, or our own.
	ln, activated, err := api.ActivationListener()
	if err != nil {
		return err
	}
	socketPath := ""
	if activated {
		socketPath = ln.Addr().String()
		log.Info("using socket from systemd", zap.String("socket_path", socketPath))
	} else {
		socketPath, err = paths.SocketPath(f.socket)
		if err != nil {
			return err
		}
		if ln, err = api.Listen(socketPath); err != nil {
			return err
		}
	}
	defer ln.Close()
	// Every process of every server: subreaper, cgroups, and what a killed
	// mcpd on this socket left behind (procs.go).
	keeper, stopKeeper := startKeeper(socketPath, log)
	defer stopKeeper()

	// Pinned tool definitions, the audit log and traces (trust.go).
	tr, err := setupTrust(stateDir(f.stateDir), cfg, f.otlpEndpoint, log)
	if err != nil {
		return err
	}
	defer tr.close()

	// Components.
	clientInfo, _ := json.Marshal(map[string]string{"name": "mcpd", "version": version.Version})
	var srv *api.Server // set below, before any child can run
	oauthMgr := newOAuthManager(stateDir(f.stateDir), log.Named("oauth"))
	sup := supervisor.New(supervisor.Options{
		Specs:                   specs(cfg),
		NewAuthorizer:           newAuthorizer(oauthMgr),
		Logger:                  log,
		Keeper:                  keeper,
		ClientInfo:              clientInfo,
		SubscriptionQueueEvents: f.queueEvents,
		SubscriptionQueueBytes:  f.queueBytes,
		Pins:                    tr.pins,
		Upstream:                tr.upstream(),
		// Children's roots/list, sampling and elicitation requests go to
		// the apps registered as hosts (api Host RPC).
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			return srv.ServeChildRequest(ctx, server, method, params)
		},
	})
	ms, err := listenMetrics(f.metricsListen, sup, log) // nil when off (metrics.go)
	if err != nil {
		return err
	}
	defer ms.close()
	srv = api.NewServer(sup, api.Options{Logger: log.Named("api"), SocketPath: socketPath, ConfigPath: cfgPath, Observer: ms.observer(),
		RequestMemoryBudget: f.requestBudget, Audit: tr.auditOptions(), Tracer: tr.apiTracer()})
	srv.SetConfig(cfgPath, cfgErr)
	if cfg != nil {
		srv.SetProfiles(cfg.Profiles)
	}
	srv.SetRemoteAuth(remoteAuth{m: oauthMgr, sup: sup})
	api.RouteGRPCLog(log.Named("grpc"))
	gs := api.NewGRPCServer(srv, log.Named("api"))
	// "mcpdctl reload" goes through the reload actor below, like SIGHUP.
	reloadReqs := make(chan reloadRequest)
	srv.SetConfigOps(api.ConfigOps{
		Reload: func(ctx context.Context) api.ConfigOutcome { return requestReload(ctx, reloadReqs) },
		Check: func(ctx context.Context, path string, content []byte) api.ConfigOutcome {
			return checkConfig(ctx, sup, cfgPath, path, content)
		},
	})
	srv.SetDaemonLog(daemonLog)
	// MCP hosts over Streamable HTTP (http.go).
	hf, err := startHTTPFace(resolveHTTPListen(f.httpListen, cfg), srv, log.Named("http"))
	if err != nil {
		return err
	}
	var hfClose sync.Once
	defer hfClose.Do(hf.close) // the error paths before the run group owns it
	// mcpdctl bridge's sessions, served in mcpd (bridgeface.go).
	bf := startBridgeFace(f.bridgeSocket, socketPath, srv, hf.be, log.Named("bridge"))
	defer bf.close()

	// Shutdown says "mcpd stopping" (with the signal, if one caused it) and
	// "mcpd stopped" at info; each actor's own lines are at debug.
	var (
		stopping   sync.Once
		stopSignal atomic.Value // string: the signal that stops mcpd
	)
	beginShutdown := func() {
		stopping.Do(func() {
			var fields []zap.Field
			if sig, _ := stopSignal.Load().(string); sig != "" {
				fields = append(fields, zap.String("signal", sig))
			}
			log.Info("mcpd stopping", fields...)
			if err := sdnotify.Notify(sdnotify.Stopping); err != nil {
				log.Warn("sd_notify failed", zap.Error(err))
			}
		})
	}

	var g run.Group
	{ // Signals.
		ctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			select {
			case sig := <-stopc:
				stopSignal.Store(sig.String())
				log.Debug("signal received", zap.String("signal", sig.String()))
				return run.SignalError{Signal: sig}
			case <-ctx.Done():
				return ctx.Err()
			}
		}, func(error) {
			cancel()
		})
	}
	// gRPC server; its stop runs in parallel with the children's (actors.go).
	addGRPCActor(&g, gs, ln, grpcStopTimeout, log, beginShutdown)
	// Metrics HTTP server, when --metrics-listen is set (metrics.go).
	ms.addActor(&g, log)
	{ // HTTP face: closed, with its streams, before the supervisor stops
		// the children, so its interrupt blocks (bounded by Face.Close).
		ctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			<-ctx.Done()
			return nil
		}, func(error) {
			beginShutdown()
			log.Debug("stopping HTTP face and bridge socket")
			bf.close() // before the backend the HTTP face closes
			hfClose.Do(hf.close)
			cancel()
		})
	}
	{ // Supervisor.
		ctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			err := sup.Run(ctx)
			log.Debug("supervisor stopped")
			return err
		}, func(error) {
			beginShutdown()
			log.Debug("stopping supervisor")
			cancel()
		})
	}
	{ // Config watcher and reload handler.
		ctx, cancel := context.WithCancel(context.Background())
		// What a reload applies besides servers and profiles: the audit
		// settings, and the profiles to the HTTP face's running bridges.
		applied := func(c *config.Config) {
			tr.reloadAudit(c, srv, log)
			hf.reconfigure(ctx)
		}
		w := config.NewWatcher(cfgPath, cfg)
		done := make(chan struct{})
		g.Add(func() error {
			defer close(done)
			watchDone := make(chan struct{})
			go func() { // owned: waited for below
				defer close(watchDone)
				if err := w.Run(ctx); err != nil {
					log.Warn("config watch unavailable; reload with SIGHUP", zap.String("config_path", cfgPath), zap.Error(err))
				}
			}()
			defer func() { <-watchDone }()
			for {
				select {
				case <-ctx.Done():
					log.Debug("reload handler stopped")
					return nil
				case <-hupc:
					// The read is bounded and stops when ctx is done, so a
					// reload never holds up shutdown.
					c, err := loadConfig(ctx, cfgPath)
					if ctx.Err() != nil {
						continue // abandoned by shutdown: nothing to apply
					}
					reload(log, sup, srv, cfgPath, config.Change{Config: c, Err: err}, applied)
					reloadHTTP(hf, f.httpListen, c, err)
				case req := <-reloadReqs:
					c, err := loadConfig(ctx, cfgPath)
					if ctx.Err() != nil {
						req.reply <- api.ConfigOutcome{Path: cfgPath, Err: fmt.Errorf("reload: %w", ctx.Err())}
						continue
					}
					req.reply <- reload(log, sup, srv, cfgPath, config.Change{Config: c, Err: err}, applied)
					reloadHTTP(hf, f.httpListen, c, err)
				case ch := <-w.Changes():
					reload(log, sup, srv, cfgPath, ch, applied)
					reloadHTTP(hf, f.httpListen, ch.Config, ch.Err)
				}
			}
		}, func(error) {
			log.Debug("stopping reload handler")
			cancel()
			<-done
		})
	}

	// READY=1: the socket is bound and the supervisor has the config (or,
	// if the file is unusable, none).
	ready := "serving on " + socketPath
	if cfgErr != nil {
		ready += "; config error: " + cfgErr.Error()
	}
	if err := sdnotify.Notify(sdnotify.Ready + "\n" + sdnotify.Status(ready)); err != nil {
		log.Warn("sd_notify failed", zap.Error(err))
	}
	err = g.Run()
	if errors.Is(err, run.ErrSignal) || errors.Is(err, context.Canceled) {
		log.Info("mcpd stopped")
		return nil
	}
	return err
}

// reloadHTTP applies a reloaded config's "httpListen"; a config that
// could not be loaded changes nothing.
func reloadHTTP(hf *httpFace, flagValue string, cfg *config.Config, loadErr error) {
	if loadErr == nil && cfg != nil {
		hf.reload(flagValue, cfg)
	}
}

// specs maps the config's servers to supervisor specs (nil config: none).
func specs(cfg *config.Config) []supervisor.Spec {
	if cfg == nil {
		return nil
	}
	out := make([]supervisor.Spec, 0, len(cfg.Servers))
	for _, s := range cfg.Servers {
		out = append(out, supervisor.Spec(s))
	}
	return out
}

// reload applies a new state of the config file to the supervisor, which
// changes only what differs; a server with problems is failed with them
// while the others run. A file that cannot be used at all (unparsable, or
// removed) keeps the running config and is reported in status and to
// systemd.
func reload(log *zap.Logger, sup *supervisor.Supervisor, srv *api.Server, path string, ch config.Change, applied func(*config.Config)) api.ConfigOutcome {
	notify := func(state string) {
		if err := sdnotify.Notify(state); err != nil {
			log.Warn("sd_notify failed", zap.Error(err))
		}
	}
	notify(sdnotify.Reloading)
	err := ch.Err
	if err == nil {
		ch.Config.CheckCommands() // the watcher's Load does not (idempotent)
		var res supervisor.ApplyResult
		res, err = sup.Apply(specs(ch.Config))
		if err == nil {
			srv.SetConfig(path, nil)
			srv.SetProfiles(ch.Config.Profiles)
			applied(ch.Config)
			log.Info("config reloaded", zap.String("config_path", path),
				zap.Strings("added", res.Added), zap.Strings("removed", res.Removed),
				zap.Strings("restarted", res.Restarted), zap.Strings("updated", res.Updated))
			logProblems(log, ch.Config)
			state := "serving; config reloaded"
			if n := len(ch.Config.Problems); n > 0 {
				state += fmt.Sprintf("; %d problem(s) in servers, see mcpdctl status", n)
			}
			notify(sdnotify.Ready + "\n" + sdnotify.Status(state))
			return api.ConfigOutcome{Path: path, Diff: res, Problems: problems(ch.Config.Problems)}
		}
	}
	log.Error("config reload failed, keeping the running config", zap.String("config_path", path), zap.Error(err))
	srv.SetConfig(path, err)
	notify(sdnotify.Ready + "\n" + sdnotify.Status("config error: "+err.Error()))
	return outcome(path, err)
}
