package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/oklog/run"
	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/httpface"
	"github.com/mcpd-dev/mcpd/internal/metrics"
	"github.com/mcpd-dev/mcpd/internal/peercred"
	"github.com/mcpd-dev/mcpd/internal/socket"
)

// Bounds of the metrics HTTP server.
const (
	metricsReadHeaderTimeout = 10 * time.Second
	metricsStopTimeout       = time.Second
)

// metricsPath is where the metrics are served.
const metricsPath = "/metrics"

// parseMetricsListen checks a --metrics-listen value as the HTTP face's
// address is checked: unix:/abs/path.sock or a loopback HOST:PORT.
func parseMetricsListen(v string) (httpface.Addr, error) {
	return httpface.ParseListen("--metrics-listen", v)
}

// metricsServer serves /metrics on the --metrics-listen address.
type metricsServer struct {
	m    *metrics.Metrics
	ln   net.Listener
	http *http.Server
}

// listenMetrics starts listening for --metrics-listen (a unix socket gets
// the API socket's checks: directory 0700 and ours, socket 0600, a live one
// never replaced), where every connection's peer uid must be ours, on a
// unix socket as on loopback TCP. It returns nil, nil when the flag is
// empty.
func listenMetrics(flagValue string, src metrics.Source, log *zap.Logger) (*metricsServer, error) {
	if flagValue == "" {
		return nil, nil
	}
	addr, err := parseMetricsListen(flagValue)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	if addr.Network == "unix" {
		ln, err = socket.Listen(addr.Address)
	} else {
		ln, err = net.Listen("tcp", addr.Address)
	}
	if err != nil {
		return nil, fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	// As on the API socket and the HTTP face, every connection's peer must
	// be our uid, whatever the socket's permissions or the port.
	ln = peercred.NewListener(ln, os.Geteuid(), log.Named("metrics_peercred"))
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

// observer is the service's CallObserver, or nil when metrics are off.
func (ms *metricsServer) observer() core.CallObserver {
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
