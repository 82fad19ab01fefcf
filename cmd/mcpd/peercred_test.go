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
// GET /metrics to the unix socket named by the variable and prints the
// status line of the answer, or nothing when the connection is closed
// without one.
const envMetricsClient = "MCPD_TEST_METRICS_CLIENT"

// metricsClient is the child's side of TestMetricsSocketRefusesOtherUID.
func metricsClient(path string) int {
	c, err := net.Dial("unix", path)
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

// TestMetricsSocketRefusesOtherUID: a process of another uid that reaches
// the metrics socket (its directory and socket opened up to everyone) gets
// its connection closed without an answer, while our own uid is served.
func TestMetricsSocketRefusesOtherUID(t *testing.T) {
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
	log := zaptest.NewLogger(t)
	ms, err := listenMetrics("unix:"+sock, emptySource{}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer ms.close()
	// Permissions alone no longer keep the other uid out.
	for p, mode := range map[string]os.FileMode{dir: 0o755, filepath.Dir(sock): 0o755, sock: 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}

	var g run.Group
	ms.addActor(&g, log)
	ctx, cancel := context.WithCancel(context.Background())
	g.Add(func() error { <-ctx.Done(); return ctx.Err() }, func(error) { cancel() })
	done := make(chan error, 1)
	go func() { done <- g.Run() }()
	defer func() {
		cancel()
		<-done
	}()

	get := func(cred *syscall.Credential) string {
		t.Helper()
		cmd := exec.Command(client, "-test.run=^$")
		cmd.Env = append(os.Environ(), envMetricsClient+"="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client (uid %v): %v: %s", cred, err, out)
		}
		return string(out)
	}
	if got := get(nil); got != "HTTP/1.0 200 OK" {
		t.Fatalf("own uid got %q, want HTTP/1.0 200 OK", got)
	}
	if got := get(&syscall.Credential{Uid: otherUID, Gid: otherUID}); got != "" {
		t.Fatalf("uid %d got %q, want the connection closed without an answer", otherUID, got)
	}
}

func must[T any](t *testing.T, f func() (T, error)) T {
	t.Helper()
	v, err := f()
	if err != nil {
		t.Fatal(err)
	}
	return v
}
