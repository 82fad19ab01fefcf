package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/oklog/run"
	"go.uber.org/zap/zaptest"
)

// envMetricsClient turns the test binary into a metrics client: it sends
// GET /metrics to the address named by the variable (a unix socket path,
// or tcp:HOST:PORT) and prints the status line of the answer, or nothing
// when the connection is closed without one.
const envMetricsClient = "MCPD_TEST_METRICS_CLIENT"

// metricsClient is the child's side of TestMetricsRefusesOtherUID.
func metricsClient(target string) int {
	network, addr := "unix", target
	if a, ok := strings.CutPrefix(target, "tcp:"); ok {
		network, addr = "tcp", a
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		fmt.Println("dial:", err)
		return 1
	}
	defer c.Close()
	if _, err := io.WriteString(c, "GET /metrics HTTP/1.0\r\nHost: mcpd\r\n\r\n"); err != nil {
		return 0 // closed under us: nothing answered
	}
	b, _ := io.ReadAll(c)
	line, _, _ := strings.Cut(string(b), "\r\n")
	fmt.Print(line)
	return 0
}

// TestMetricsRefusesOtherUID: a process of another uid that reaches the
// metrics listener, on a unix socket (its directory and socket opened up
// to everyone) or on loopback TCP, gets its connection closed without an
// answer, while our own uid is served.
func TestMetricsRefusesOtherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	const otherUID = 65534                    // nobody
	dir, err := os.MkdirTemp("", "mcpd-peer") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// The other uid must be able to run the client: a copy of this binary
	// outside the build cache's private directories.
	client := filepath.Join(dir, "client")
	self, err := os.ReadFile(must(t, os.Executable))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(client, self, 0o755); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "metrics.sock")
	serveMetricsT(t, "unix:"+sock)
	// Permissions alone no longer keep the other uid out.
	for p, mode := range map[string]os.FileMode{dir: 0o755, filepath.Dir(sock): 0o755, sock: 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	tcp := "tcp:" + serveMetricsT(t, "127.0.0.1:0")

	get := func(target string, cred *syscall.Credential) string {
		t.Helper()
		cmd := exec.Command(client, "-test.run=^$")
		cmd.Env = append(os.Environ(), envMetricsClient+"="+target)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client (uid %v): %v: %s", cred, err, out)
		}
		return string(out)
	}
	other := &syscall.Credential{Uid: otherUID, Gid: otherUID}
	for _, target := range []string{sock, tcp} {
		if got := get(target, nil); got != "HTTP/1.0 200 OK" {
			t.Fatalf("own uid at %s got %q, want HTTP/1.0 200 OK", target, got)
		}
		if got := get(target, other); got != "" {
			t.Fatalf("uid %d at %s got %q, want the connection closed without an answer", otherUID, target, got)
		}
	}
}

// serveMetricsT serves empty metrics at flagValue until the test ends, and
// returns the bound address.
func serveMetricsT(t *testing.T, flagValue string) string {
	t.Helper()
	log := zaptest.NewLogger(t)
	ms, err := listenMetrics(flagValue, emptySource{}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ms.close) // after the group stopped: cleanups run last first
	var g run.Group
	ms.addActor(&g, log)
	ctx, cancel := context.WithCancel(context.Background())
	g.Add(func() error { <-ctx.Done(); return ctx.Err() }, func(error) { cancel() })
	done := make(chan error, 1)
	go func() { done <- g.Run() }() // waited for at cleanup
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return ms.ln.Addr().String()
}

func must[T any](t *testing.T, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
