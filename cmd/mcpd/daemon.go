package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/oklog/run"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/gomaxprocs"
	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/sdnotify"
	"github.com/mcpd-dev/mcpd/internal/secrets"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/transport"
	"github.com/mcpd-dev/mcpd/internal/version"
)

// daemon is one run of mcpd: its config, listeners and components, built
// in order by loadConfig and build, run as actors, and released by close
// in the reverse order.
type daemon struct {
	f       *flags
	log     *zap.Logger
	secrets *secrets.Store   // ${secret:NAME} values
	hupc    <-chan os.Signal // SIGHUP: reload

	cfgPath string
	cfg     *config.Config // nil: no usable file
	cfgErr  error          // why the config file cannot be used at all (status shows it)

	ln         net.Listener
	socketPath string
	httpFD     *os.File // the HTTP socket systemd passed; nil: none
	sup        *supervisor.Supervisor
	srv        *core.Service
	gs         *grpc.Server
	ms         *metricsServer
	tr         *trust
	hf         *httpFace
	hfClose    sync.Once // the HTTP face closes once: on shutdown, or at close
	bf         *bridgeFace
	reloadReqs chan reloadRequest   // "mcpdctl reload", served by the reload actor
	gov        *gomaxprocs.Governor // GOMAXPROCS with the calls in flight and their CPU (gomaxprocs.go)

	cleanups []func() // run by close, last first

	stopping   sync.Once
	stopSignal atomic.Value // string: the signal that stops mcpd
}

// deferClose adds f to what close runs.
func (d *daemon) deferClose(f func()) { d.cleanups = append(d.cleanups, f) }

// close releases what build acquired, in the reverse order.
func (d *daemon) close() {
	for i := len(d.cleanups) - 1; i >= 0; i-- {
		d.cleanups[i]()
	}
	d.cleanups = nil
}

// loadConfig reads the config file; it reports whether a signal
// interrupted the read (mcpd then stops). An unusable or missing file is
// no error: mcpd runs with no servers until it is fixed.
func (d *daemon) loadConfig() (interrupted bool) {
	d.cfgPath = paths.ConfigPath(d.f.config)
	if abs, err := filepath.Abs(d.cfgPath); err == nil {
		d.cfgPath = abs // as status and the logs show it, whatever the cwd of who reads them
	}
	// The read is bounded (config.ReadTimeout) and a signal abandons it.
	loadCtx, loadDone := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	cfg, err := loadConfig(loadCtx, d.cfgPath)
	interrupted = loadCtx.Err() != nil
	loadDone()
	switch {
	case interrupted:
		d.log.Info("signal received while reading the config, stopping")
	case errors.Is(err, fs.ErrNotExist):
		d.log.Info("no config file, running with no servers; create it with an \"mcpServers\" object to add some",
			zap.String("config_path", d.cfgPath))
	case err != nil:
		// Not fatal: mcpd serves no servers until the file is fixed (the
		// watcher, SIGHUP or mcpdctl reload picks the fix up).
		d.log.Error("config file unusable, running with no servers until it is fixed",
			zap.String("config_path", d.cfgPath), zap.Error(err))
		d.cfgErr = err
	default:
		d.cfg = cfg
		logProblems(d.log, cfg) // each server's, for its own status
	}
	return interrupted
}

// listen binds the API socket: systemd's, or mcpd's own; it keeps the
// HTTP socket systemd passed, if any, for the HTTP face.
func (d *daemon) listen() error {
	act, err := socket.Activated()
	if err != nil {
		return err
	}
	if act.HTTP != nil {
		d.httpFD = act.HTTP
		d.deferClose(func() { act.HTTP.Close() })
		d.log.Info("using HTTP socket from systemd")
	}
	ln := act.API
	if ln != nil {
		d.socketPath = ln.Addr().String()
		d.log.Info("using socket from systemd", zap.String("socket_path", d.socketPath))
	} else {
		if d.socketPath, err = paths.SocketPath(d.f.socket); err != nil {
			return err
		}
		if ln, err = socket.Listen(d.socketPath); err != nil {
			return err
		}
	}
	d.ln = ln
	d.deferClose(func() { ln.Close() })
	return nil
}

// build binds the sockets and makes the components: the process keeper,
// trust (pins, audit, traces), the supervisor, metrics, the API server and
// the host-facing faces.
func (d *daemon) build(daemonLog *transport.Ring) error {
	if err := d.listen(); err != nil {
		return err
	}
	log, f := d.log, d.f
	// Every process of every server: subreaper, cgroups, and what a killed
	// mcpd on this socket left behind (procs.go).
	keeper, stopKeeper := startKeeper(d.socketPath, log)
	d.deferClose(stopKeeper)
	// Pinned tool definitions, the audit log and traces (trust.go).
	tr, err := setupTrust(stateDir(f.stateDir), d.cfg, f.otlpEndpoint, log)
	if err != nil {
		return err
	}
	d.tr = tr
	d.deferClose(tr.close)

	clientInfo, _ := json.Marshal(map[string]string{"name": "mcpd", "version": version.Version})
	// ${secret:NAME} values, read when a server starts: the Secret
	// Service, else a 0600 file in the state dir. Never interactive: a
	// locked keyring fails that server's start, it never blocks mcpd.
	d.secrets = secrets.Open(secrets.Options{File: filepath.Join(stateDir(f.stateDir), secrets.FileName)})
	d.deferClose(d.secrets.Close)
	// OAuth tokens: one item of the same Secret Service, else oauth.json.
	oauthMgr := newOAuthManager(stateDir(f.stateDir), d.secrets, log.Named("oauth"))
	d.sup = supervisor.New(supervisor.Options{
		Specs:                   specs(d.cfg),
		Secrets:                 d.secrets,
		NewAuthorizer:           core.OAuthAuthorizers(oauthMgr),
		Logger:                  log,
		Keeper:                  keeper,
		ClientInfo:              clientInfo,
		SubscriptionQueueEvents: f.queueEvents,
		SubscriptionQueueBytes:  f.queueBytes,
		Pins:                    tr.pins,
		Upstream:                tr.upstream(),
		Load:                    d.gov,
		// Children's roots/list, sampling and elicitation requests go to
		// the apps registered as hosts (api Host RPC); d.srv is set below,
		// before any child can run.
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			return d.srv.ServeChildRequest(ctx, server, method, params)
		},
		// A url elicitation's completion goes to the app it was sent to.
		OnHostNotification: func(ctx context.Context, server, method string, params json.RawMessage) {
			d.srv.ServeChildNotification(ctx, server, method, params)
		},
	})
	if d.ms, err = listenMetrics(f.metricsListen, d.sup, log); err != nil { // nil when off (metrics.go)
		return err
	}
	d.deferClose(d.ms.close)
	d.buildAPI(oauthMgr, daemonLog)
	// MCP hosts over Streamable HTTP (http.go).
	if d.hf, err = startHTTPFace(resolveHTTPListen(f.httpListen, d.cfg), d.httpFD, d.srv, d.cfg, log.Named("http")); err != nil {
		return err
	}
	d.deferClose(func() { d.hfClose.Do(d.hf.close) }) // the error paths before the actors own it
	// mcpdctl bridge's sessions, served in mcpd (bridgeface.go).
	d.bf = startBridgeFace(f.bridgeSocket, d.socketPath, d.srv, d.hf.be, log.Named("bridge"))
	d.deferClose(d.bf.close)
	return nil
}

// buildAPI makes the API server over the supervisor, and its gRPC server.
func (d *daemon) buildAPI(oauthMgr *oauth.Manager, daemonLog *transport.Ring) {
	log, f, sup := d.log, d.f, d.sup
	srv := core.New(sup, core.Options{Logger: log.Named("api"), SocketPath: d.socketPath, ConfigPath: d.cfgPath,
		Observer: d.ms.observer(), RequestMemoryBudget: f.requestBudget, Audit: d.tr.auditOptions(), Tracer: d.tr.apiTracer(),
		SecretsBackend: d.secrets.Backend, OAuthStore: oauthMgr.StoreStatus})
	d.srv = srv
	srv.SetConfig(d.cfgPath, d.cfgErr)
	if d.cfg != nil {
		srv.SetProfiles(d.cfg.Profiles)
	}
	srv.SetRemoteAuth(core.NewRemoteAuth(oauthMgr, sup))
	api.RouteGRPCLog(log.Named("grpc"))
	d.gs = api.NewGRPCServer(srv, log.Named("api"))
	// "mcpdctl reload" goes through the reload actor, like SIGHUP.
	d.reloadReqs = make(chan reloadRequest)
	srv.SetConfigOps(core.ConfigOps{
		Reload: func(ctx context.Context) core.ConfigOutcome { return requestReload(ctx, d.reloadReqs) },
		Check: func(ctx context.Context, path string, content []byte) core.ConfigOutcome {
			return checkConfig(ctx, sup, srv, d.cfgPath, path, content)
		},
	})
	srv.SetDaemonLog(daemonLog)
}

// beginShutdown says "mcpd stopping" (with the signal, if one caused it)
// at info, once; each actor's own lines are at debug.
func (d *daemon) beginShutdown() {
	d.stopping.Do(func() {
		var fields []zap.Field
		if sig, _ := d.stopSignal.Load().(string); sig != "" {
			fields = append(fields, zap.String("signal", sig))
		}
		d.log.Info("mcpd stopping", fields...)
		if err := sdnotify.Notify(sdnotify.Stopping); err != nil {
			d.log.Warn("sd_notify failed", zap.Error(err))
		}
	})
}

// actors is the run group of mcpd: signals, the gRPC server, metrics, the
// faces, the supervisor and the reload handler.
func (d *daemon) actors(stopc <-chan os.Signal) *run.Group {
	log := d.log
	var g run.Group
	{ // Signals.
		ctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			select {
			case sig := <-stopc:
				d.stopSignal.Store(sig.String())
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
	addGRPCActor(&g, d.gs, d.ln, grpcStopTimeout, log, d.beginShutdown)
	// Metrics HTTP server, when --metrics-listen is set (metrics.go).
	d.ms.addActor(&g, log)
	{ // HTTP face: closed, with its streams, before the supervisor stops
		// the children, so its interrupt blocks (bounded by Face.Close).
		ctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			<-ctx.Done()
			return nil
		}, func(error) {
			d.beginShutdown()
			log.Debug("stopping HTTP face and bridge socket")
			d.bf.close() // before the backend the HTTP face closes
			d.hfClose.Do(d.hf.close)
			cancel()
		})
	}
	{ // Supervisor.
		ctx, cancel := context.WithCancel(context.Background())
		g.Add(func() error {
			err := d.sup.Run(ctx)
			log.Debug("supervisor stopped")
			return err
		}, func(error) {
			d.beginShutdown()
			log.Debug("stopping supervisor")
			cancel()
		})
	}
	d.addReloadActor(&g)
	addGovernorActor(&g, d.gov)
	return &g
}

// addReloadActor adds the config watcher and the reload handler: SIGHUP,
// "mcpdctl reload" and the watcher's changes, one at a time.
func (d *daemon) addReloadActor(g *run.Group) {
	log, cfgPath := d.log, d.cfgPath
	ctx, cancel := context.WithCancel(context.Background())
	// What a reload applies besides servers and profiles: the audit
	// settings, and the profiles to the HTTP face's running bridges.
	applied := func(c *config.Config) {
		d.tr.reloadAudit(c, d.srv, log)
		d.hf.reconfigure(ctx)
	}
	apply := func(ch config.Change) core.ConfigOutcome {
		out := reload(log, d.sup, d.srv, cfgPath, ch, applied)
		reloadHTTP(d.hf, d.f.httpListen, ch.Config, ch.Err)
		return out
	}
	w := config.NewWatcher(cfgPath, d.cfg)
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
			case <-d.hupc:
				// The read is bounded and stops when ctx is done, so a
				// reload never holds up shutdown.
				c, err := loadConfig(ctx, cfgPath)
				if ctx.Err() != nil {
					continue // abandoned by shutdown: nothing to apply
				}
				apply(config.Change{Config: c, Err: err})
			case req := <-d.reloadReqs:
				c, err := loadConfig(ctx, cfgPath)
				if ctx.Err() != nil {
					req.reply <- core.ConfigOutcome{Path: cfgPath, Err: fmt.Errorf("reload: %w", ctx.Err())}
					continue
				}
				req.reply <- apply(config.Change{Config: c, Err: err})
			case ch := <-w.Changes():
				apply(ch)
			}
		}
	}, func(error) {
		log.Debug("stopping reload handler")
		cancel()
		<-done
	})
}
