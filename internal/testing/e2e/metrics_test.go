package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// scrapeUnix GETs /metrics over the unix socket sock and returns the
// samples by their full name with labels, e.g.
// `mcpd_calls_total{server="fake"}`.
func scrapeUnix(t *testing.T, sock string) map[string]float64 {
	t.Helper()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: tr, Timeout: waitTimeout}
	resp, err := hc.Get("http://mcpd/metrics")
	if err != nil {
		t.Fatalf("scrape: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape: %s, %v", resp.Status, err)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			t.Fatalf("exposition line %q: %v", line, err)
		}
		out[line[:i]] = v
	}
	return out
}

// TestMetricsEndpoint starts the real mcpd with --metrics-listen on a unix
// socket, makes a call, and scrapes the call counter and the latency
// histogram.
func TestMetricsEndpoint(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	sock := filepath.Join(dir, "run", "metrics.sock")
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), writeConfig(t, dir, map[string]server{"fake": {Mode: "legacy"}}),
		"--metrics-listen", "unix:"+sock)
	d.waitServing()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("metrics socket mode %v, want 0600", fi.Mode().Perm())
	}

	before := scrapeUnix(t, sock)
	if v, ok := before[`mcpd_calls_total{server="fake"}`]; !ok || v != 0 {
		t.Fatalf("before any call: mcpd_calls_total = %v (present %v), want 0", v, ok)
	}
	for _, want := range []string{"go_goroutines", "process_resident_memory_bytes"} {
		if _, ok := before[want]; !ok {
			t.Errorf("no %s in the exposition", want)
		}
	}

	c := d.client()
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "fake", Tool: "echo", ArgumentsJson: echoArgs("hi")})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, resp); got != "hi" {
		t.Fatalf("echo = %q", got)
	}
	d.status(c) // records the child's pid for the cleanup check

	after := scrapeUnix(t, sock)
	for name, want := range map[string]float64{
		`mcpd_calls_total{server="fake"}`:                                                   1,
		`mcpd_calls_failed_total{server="fake"}`:                                            0,
		`mcpd_server_state{server="fake",state="ready"}`:                                    1,
		`mcpd_request_duration_seconds_count{method="tools/call",server="fake"}`:            1,
		`mcpd_request_duration_seconds_bucket{method="tools/call",server="fake",le="+Inf"}`: 1,
	} {
		if got, ok := after[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v), want %v", name, got, ok, want)
		}
	}
	if sum := after[`mcpd_request_duration_seconds_sum{method="tools/call",server="fake"}`]; sum <= 0 {
		t.Errorf("latency sum = %v, want > 0", sum)
	}

	// SIGTERM: mcpd exits cleanly and removes the metrics socket.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(); err != nil {
		t.Fatalf("mcpd exit: %v", err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("metrics socket left after exit: %v", err)
	}
}

// TestMetricsNonLoopbackRefused checks that mcpd refuses to serve metrics
// beyond this machine and says so.
func TestMetricsNonLoopbackRefused(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), filepath.Join(dir, "none.json"), "--metrics-listen", "0.0.0.0:9464")
	err := d.wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("mcpd with --metrics-listen 0.0.0.0:9464 exited with %v, want status 2 (a usage error)", err)
	}
	if out := d.stderr.String(); !strings.Contains(out, "0.0.0.0 is not a loopback address") {
		t.Errorf("output %q does not explain the refusal", out)
	}
}

// TestMetricsLoopbackTCP serves metrics on 127.0.0.1 with a port the test
// picked (port 0 could not be found from outside).
func TestMetricsLoopbackTCP(t *testing.T) {
	skipShort(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	// Another process could take the port before mcpd does; then mcpd
	// exits and waitServing reports it.
	l.Close()
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), filepath.Join(dir, "none.json"), "--metrics-listen", addr)
	d.waitServing()
	hc := &http.Client{Timeout: waitTimeout}
	var resp *http.Response
	poll(t, "metrics on "+addr, func() (bool, error) {
		resp, err = hc.Get("http://" + addr + "/metrics")
		return err == nil, nil
	})
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte("mcpd_build_info{")) {
		t.Errorf("GET /metrics: %s\n%.500s", resp.Status, body)
	}
}
