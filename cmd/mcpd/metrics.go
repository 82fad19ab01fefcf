package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/run"
	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/metrics"
	"github.com/mcpd-dev/mcpd/internal/peercred"
)

// Bounds of the metrics HTTP server.
const (
	metricsReadHeaderTimeout = 10 * time.Second
	metricsStopTimeout       = time.Second
)

// metricsPath is where the metrics are served.
const metricsPath = "/metrics"

// metricsAddr is a parsed --metrics-listen value.
type metricsAddr struct {
	network string // "unix" or "tcp"
	address string // socket path, or loopback host:port
}

// String renders the address as the flag takes it.
func (a metricsAddr) String() string {
	if a.network == "unix" {
		return "unix:" + a.address
	}
	return a.address
}

// parseMetricsListen checks a --metrics-listen value: "unix:/abs/path.sock",
// or "HOST:PORT" where HOST is a loopback address (127.0.0.0/8, ::1) or
// "localhost". Anything that would listen beyond this machine is refused.
func parseMetricsListen(v string) (metricsAddr, error) {
	if path, ok := strings.CutPrefix(v, "unix:"); ok {
		if !strings.HasPrefix(path, "/") {
			return metricsAddr{}, fmt.Errorf("invalid --metrics-listen %q: want an absolute socket path after unix:", v)
		}
		return metricsAddr{network: "unix", address: path}, nil
	}
	host, port, err := net.SplitHostPort(v)
	if err != nil {
		return metricsAddr{}, fmt.Errorf("invalid --metrics-listen %q: want unix:/path/to.sock or a loopback HOST:PORT such as 127.0.0.1:9464: %w", v, err)
	}
	if p, err := strconv.ParseUint(port, 10, 16); err != nil || (p == 0 && port != "0") {
		return metricsAddr{}, fmt.Errorf("invalid --metrics-listen %q: port %q is not a number from 0 to 65535", v, port)
	}
	switch {
	case strings.EqualFold(host, "localhost"):
		// Pinned to 127.0.0.1 rather than resolved, so that no hosts file
		// can point it elsewhere.
		host = "127.0.0.1"
	case host == "":
		return metricsAddr{}, fmt.Errorf("refusing --metrics-listen %q: an empty host listens on every interface; use 127.0.0.1:%s, [::1]:%s or unix:/path", v, port, port)
	default:
		ip := net.ParseIP(host)
		if ip == nil {
			return metricsAddr{}, fmt.Errorf("refusing --metrics-listen %q: host %q is not a loopback address; use 127.0.0.1, [::1], localhost or unix:/path", v, host)
		}
		if !ip.IsLoopback() {
			return metricsAddr{}, fmt.Errorf("refusing --metrics-listen %q: %s is not a loopback address, and metrics are served only on this machine (127.0.0.1, [::1], localhost or unix:/path)", v, host)
		}
	}
	return metricsAddr{network: "tcp", address: net.JoinHostPort(host, port)}, nil
}

// metricsServer serves /metrics on the --metrics-listen address.
type metricsServer struct {
	m    *metrics.Metrics
	ln   net.Listener
	http *http.Server
}

// listenMetrics starts listening for --metrics-listen (a unix socket gets
// the API socket's checks: directory 0700 and ours, socket 0600, a live one
// never replaced, and every connection's peer uid ours). It returns nil, nil when the flag is empty.
func listenMetrics(flagValue string, src metrics.Source, log *zap.Logger) (*metricsServer, error) {
	if flagValue == "" {
		return nil, nil
	}
	addr, err := parseMetricsListen(flagValue)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	if addr.network == "unix" {
		ln, err = api.Listen(addr.address)
	} else {
		ln, err = net.Listen("tcp", addr.address)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	if addr.network == "unix" {
		// As on the API socket, every connection's peer must be our uid,
		// whatever the socket's permissions.
		ln = peercred.NewListener(ln, os.Geteuid(), log.Named("metrics_peercred"))
	}
	m := metrics.New(src, log.Named("metrics"))
	mux := http.NewServeMux()
	mux.Handle("GET "+metricsPath, m.Handler())
	return &metricsServer{
		m:  m,
		ln: ln,
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: metricsReadHeaderTimeout,
			ErrorLog:          zap.NewStdLog(log.Named("metrics_http")),
		},
	}, nil
}

// observer is the api's CallObserver, or nil when metrics are off.
func (ms *metricsServer) observer() api.CallObserver {
	if ms == nil {
		return nil
	}
	return ms.m
}

// close releases the listener (removing a unix socket file); for the
// error paths before the run group owns it.
func (ms *metricsServer) close() {
	if ms != nil {
		ms.ln.Close()
	}
}

// addActor adds the metrics HTTP server to g; nothing when metrics are off.
func (ms *metricsServer) addActor(g *run.Group, log *zap.Logger) {
	if ms == nil {
		return
	}
	addServing(g, func() error { // stops in parallel with the others (actors.go)
		log.Info("serving metrics", zap.String("metrics_addr", ms.ln.Addr().String()), zap.String("path", metricsPath))
		err := ms.http.Serve(ms.ln)
		log.Debug("metrics server stopped")
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("metrics: serve: %w", err)
	}, func() {
		log.Debug("stopping metrics server")
		ctx, cancel := context.WithTimeout(context.Background(), metricsStopTimeout)
		defer cancel()
		if err := ms.http.Shutdown(ctx); err != nil {
			ms.http.Close()
		}
	})
}
