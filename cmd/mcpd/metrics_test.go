package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/oklog/run"
	"go.uber.org/goleak"
	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

func TestMain(m *testing.M) {
	if path := os.Getenv(envMetricsClient); path != "" {
		os.Exit(metricsClient(path))
	}
	if args := os.Getenv(envActivated); args != "" {
		os.Exit(activatedDaemon(args))
	}
	if os.Getenv(envRunMcpd) != "" {
		main() // exits unless it stops cleanly
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func TestParseMetricsListen(t *testing.T) {
	ok := []struct{ in, network, address string }{
		{"unix:/run/user/1000/mcpd/metrics.sock", "unix", "/run/user/1000/mcpd/metrics.sock"},
		{"127.0.0.1:9464", "tcp", "127.0.0.1:9464"},
		{"127.3.4.5:9464", "tcp", "127.3.4.5:9464"},
		{"[::1]:9464", "tcp", "[::1]:9464"},
		{"localhost:9464", "tcp", "127.0.0.1:9464"},
		{"LOCALHOST:0", "tcp", "127.0.0.1:0"},
	}
	for _, c := range ok {
		a, err := parseMetricsListen(c.in)
		if err != nil || a.Network != c.network || a.Address != c.address {
			t.Errorf("parseMetricsListen(%q) = %+v, %v; want %s %s", c.in, a, err, c.network, c.address)
		}
	}
	bad := []struct{ in, want string }{
		{"0.0.0.0:9464", "not a loopback address"},
		{"[::]:9464", "not a loopback address"},
		{"192.168.1.10:9464", "not a loopback address"},
		{"10.0.0.1:9464", "not a loopback address"},
		{"[::ffff:10.0.0.1]:9464", "not a loopback address"},
		{"example.com:9464", "not a loopback address"},
		{":9464", "every interface"},
		{"127.0.0.1", "want a loopback HOST:PORT"},
		{"127.0.0.1:http", "not a number"},
		{"127.0.0.1:65536", "not a number"},
		{"unix:relative.sock", "absolute socket path"},
		{"unix:", "absolute socket path"},
	}
	for _, c := range bad {
		a, err := parseMetricsListen(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("parseMetricsListen(%q) = %+v, %v; want an error containing %q", c.in, a, err, c.want)
		}
	}
}

// TestRunDaemonRefusesNonLoopback checks that a bad --metrics-listen stops
// mcpd before it does anything else.
func TestRunDaemonRefusesNonLoopback(t *testing.T) {
	var stdout, stderr bytes.Buffer
	dir := t.TempDir()
	err := runDaemon([]string{"--socket", filepath.Join(dir, "mcpd.sock"), "--config", filepath.Join(dir, "none.json"),
		"--metrics-listen", "0.0.0.0:9464"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "refusing --metrics-listen \"0.0.0.0:9464\"") {
		t.Fatalf("runDaemon = %v, want the non-loopback address refused", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mcpd.sock")); !os.IsNotExist(err) {
		t.Errorf("API socket created before the flag was refused: %v", err)
	}
}

// emptySource is a metrics.Source with no servers.
type emptySource struct{}

func (emptySource) Status() []supervisor.Status           { return nil }
func (emptySource) Subscriptions() *subscriptions.Manager { return nil }

// TestMetricsServerOnUnixSocket runs the metrics actor on a unix socket:
// the socket is 0600, /metrics answers with the Go runtime metrics, and
// stopping the actor removes the socket.
func TestMetricsServerOnUnixSocket(t *testing.T) {
	dir, err := os.MkdirTemp("", "mcpd-metrics") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "run", "metrics.sock")
	log := zaptest.NewLogger(t)
	ms, err := listenMetrics("unix:"+sock, emptySource{}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.close()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v, want 0600", fi.Mode().Perm())
	}
	if di, err := os.Stat(filepath.Dir(sock)); err != nil || di.Mode().Perm() != 0o700 {
		t.Errorf("socket dir: %v, %v; want mode 0700", di.Mode().Perm(), err)
	}

	var g run.Group
	ms.addActor(&g, log)
	ctx, cancel := context.WithCancel(context.Background())
	g.Add(func() error { <-ctx.Done(); return ctx.Err() }, func(error) { cancel() })
	done := make(chan error, 1)
	go func() { done <- g.Run() }()

	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	resp, err := hc.Get("http://mcpd/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	for _, want := range []string{"go_goroutines ", "process_open_fds ", "mcpd_build_info{version="} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if resp, err := hc.Get("http://mcpd/"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /: %v, %v; want 404", resp, err)
	} else {
		resp.Body.Close()
	}
	tr.CloseIdleConnections()

	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("run group: %v, want context.Canceled", err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("metrics socket left behind: %v", err)
	}
}
