// Command mcpd is the per-user daemon that supervises local MCP servers as
// child processes and serves them to local apps over gRPC on a Unix socket.
//
// main only parses flags, builds the logger and wires the components into
// one oklog/run group; the logic lives under internal/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/oklog/run"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/httpface"
	"github.com/mcpd-dev/mcpd/internal/logsink"
	"github.com/mcpd-dev/mcpd/internal/pollio"
	"github.com/mcpd-dev/mcpd/internal/sandbox"
	"github.com/mcpd-dev/mcpd/internal/sdnotify"
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
systemd: READY=1/RELOADING=1/STOPPING=1 go to $NOTIFY_SOCKET. Sockets passed
by socket activation (LISTEN_FDS, LISTEN_FDNAMES) are used: the one named
"http" by the HTTP face, the other (named "api", or unnamed) instead of --socket.
The config file is also watched: a saved change is applied without restarting
untouched servers; an invalid one is reported and the running config kept.

Metrics: with --metrics-listen, Prometheus metrics are served at /metrics on a
unix socket (unix:/path/to.sock, mode 0600) or a loopback address
(127.0.0.1:PORT, [::1]:PORT, localhost:PORT); other addresses are refused.
Only this user is served (every connection's peer uid is checked). Off by
default.

MCP hosts over HTTP: mcpd serves its MCP server for hosts over Streamable
HTTP at http://127.0.0.1:6273/mcp (every server) and /servers/NAME/mcp (one),
to this user only (every connection's peer uid is checked) and with Host and
Origin checked against DNS rebinding. --http-listen, else the config's
"httpListen", sets the address: a loopback HOST:PORT, unix:/path/to.sock or
off. If the default address is taken mcpd runs without it ("mcpdctl status"
says why); an address that was set and cannot be bound is an error. A socket
systemd passed (mcpd-http.socket) is served instead of the default address,
and when the setting names its address; a setting of another address, or off,
wins over it with a warning, and the passed socket is left unserved.
?root=/abs/dir on a URL names the workspace root of its session: a server with
"share": "root" runs one instance per root, in that directory.

Memory: while Go's garbage collector runs 8 or more times a second (calls
relayed as fast as a child answers), mcpd lets its heap grow 16 MiB past what
is live between collections, and goes back to Go's default pace, returning the
memory, once three seconds pass without one; $GOGC, when set, decides instead.

Exit status: 0 after a clean stop (SIGINT or SIGTERM), 1 when mcpd cannot
serve (the socket cannot be bound, say) or fails while serving, 2 for a
usage error (an unknown flag, a bad flag value, an extra argument).

Flags:
`

func main() {
	// A sandboxed server's start: apply its sandbox, exec it (never returns).
	sandbox.RunIfHelper()
	if err := runDaemon(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		printError(os.Stderr, err)
		os.Exit(exitCode(err))
	}
}

// Exit statuses other than 0 (a clean stop), as mcpd --help states them.
const (
	exitFailure = 1 // mcpd could not serve, or failed while serving
	exitUsage   = 2 // a usage error: an unknown flag or a bad flag value
)

// usageError is an error of the command line.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// exitCode is the exit status for err, which runDaemon returned.
func exitCode(err error) int {
	if errors.As(err, new(usageError)) {
		return exitUsage
	}
	return exitFailure
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
	// procs is --procs (gomaxprocs.go); 0: $GOMAXPROCS if set, else
	// between half and all of the CPUs, with the calls in flight and the
	// CPU they take.
	procs int
}

// parseFlags parses and checks the command line; every error but
// flag.ErrHelp (--help) is a usageError.
func parseFlags(args []string, stderr io.Writer) (*flags, error) {
	f, err := parseArgs(args, stderr)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		return nil, usageError{err}
	}
	return f, err
}

func parseArgs(args []string, stderr io.Writer) (*flags, error) {
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
	set.Int64Var(&f.requestBudget, "request-memory-budget", core.DefaultRequestMemoryBudget, "`bytes` all requests in flight may take together; past it a request is refused with RESOURCE_EXHAUSTED")
	set.StringVar(&f.metricsListen, "metrics-listen", "", "serve Prometheus metrics at /metrics on `addr`: unix:/path/to.sock or a loopback HOST:PORT (default off)")
	set.StringVar(&f.httpListen, "http-listen", "", "serve MCP hosts over Streamable HTTP on `addr`: a loopback HOST:PORT, unix:/path/to.sock or off (default the config's \"httpListen\", else "+httpface.DefaultAddr+")")
	set.StringVar(&f.stateDir, "state-dir", "", "`dir` of the pinned tool definitions and the audit log (default $XDG_STATE_HOME/mcpd, else ~/.local/state/mcpd)")
	set.BoolVar(&f.bridgeSocket, "bridge-socket", true, "serve mcpdctl bridge on a socket beside the API socket (its name with -bridge.sock), running the bridge inside mcpd")
	set.IntVar(&f.procs, "procs", 0, "threads running Go code at once (GOMAXPROCS); 0: $GOMAXPROCS if set, else half the CPUs (at least 1), and all of them while an event goes to 4 or more apps or 4 or more calls in flight keep those low threads at least half busy")
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
	if _, err := loggerConfig(f.logLevel, f.logFormat); err != nil {
		return nil, err
	}
	if f.procs < 0 {
		return nil, fmt.Errorf("--procs must be 0 (automatic) or a positive number of threads")
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
// Entries go through a log sink, so that a stderr nobody reads drops them
// rather than stopping whoever logs; closeLog writes what is queued, for
// up to logCloseTimeout, and is called last.
func newLogger(level, format string) (log *zap.Logger, closeLog func(), err error) {
	cfg, err := loggerConfig(level, format)
	if err != nil {
		return nil, nil, err
	}
	journal := journalStream(os.Stderr)
	sink := logsink.New(pollio.Stderr(), logsink.Options{Note: droppedNote(cfg, journal)})
	log = buildLogger(cfg, sink, journal)
	return log, func() { _ = sink.Close(logCloseTimeout) }, nil
}

// logCloseTimeout bounds how long mcpd's exit waits for a stderr that does
// not take the last log entries.
const logCloseTimeout = 2 * time.Second

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

	log, closeLog, err := newLogger(f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	defer closeLog()
	// mcpd's own recent log lines, for "mcpdctl logs" without a name (ops.go).
	daemonLog := transport.NewRing(daemonLogLines, daemonLogBytes)
	log = teeToRing(log, daemonLog)

	defer startGCPace(log).Stop()
	d := &daemon{f: f, log: log, hupc: hupc, gov: newGovernor(f.procs)}
	defer d.close()
	if interrupted := d.loadConfig(); interrupted {
		return nil
	}
	if err := d.build(daemonLog); err != nil {
		return err
	}
	g := d.actors(stopc)

	// READY=1: the socket is bound and the supervisor has the config (or,
	// if the file is unusable, none).
	ready := "serving on " + d.socketPath
	if d.cfgErr != nil {
		ready += "; config error: " + d.cfgErr.Error()
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
func reload(log *zap.Logger, sup *supervisor.Supervisor, srv *core.Service, path string, ch config.Change, applied func(*config.Config)) core.ConfigOutcome {
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
			profiles := srv.ProfileChangesTo(ch.Config.Profiles)
			srv.SetProfiles(ch.Config.Profiles)
			applied(ch.Config)
			log.Info("config reloaded", zap.String("config_path", path),
				zap.Strings("added", res.Added), zap.Strings("removed", res.Removed),
				zap.Strings("restarted", res.Restarted), zap.Strings("updated", res.Updated),
				zap.Strings("profiles_added", profiles.Added), zap.Strings("profiles_removed", profiles.Removed),
				zap.Strings("profiles_changed", profiles.Changed))
			logProblems(log, ch.Config)
			state := "serving; config reloaded"
			if n := len(ch.Config.Problems); n > 0 {
				state += fmt.Sprintf("; %d problem(s) in servers, see mcpdctl status", n)
			}
			notify(sdnotify.Ready + "\n" + sdnotify.Status(state))
			return core.ConfigOutcome{Path: path, Diff: res, Profiles: profiles, Problems: problems(ch.Config.Problems)}
		}
	}
	log.Error("config reload failed, keeping the running config", zap.String("config_path", path), zap.Error(err))
	srv.SetConfig(path, err)
	notify(sdnotify.Ready + "\n" + sdnotify.Status("config error: "+err.Error()))
	return outcome(path, err)
}
