package main

import (
	"bytes"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/paths"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// envRunAs makes the test binary run mcpdctl with the arguments after "--"
// instead of the tests (see TestMain), so a test can run it as another uid.
const envRunAs = "MCPDCTL_TEST_RUN"

// runAsHelper runs mcpdctl when envRunAs is set and reports whether it did
// (and with which exit code).
func runAsHelper() (int, bool) {
	if os.Getenv(envRunAs) == "" {
		return 0, false
	}
	args := os.Args[1:]
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	return runProcess(args), true
}

// mcpd turns away every uid but its own at the handshake, which a client
// sees only as a closed connection: mcpdctl says so instead of "mcpd is not
// running".
func TestOtherUIDToldWhy(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run mcpdctl as another uid")
	}
	const nobody = 65534
	dir, binDir := openTempDir(t), openTempDir(t)
	// Open the file permissions, so that only the SO_PEERCRED check stands
	// between uid 65534 and the API, as it does for root on a user's socket.
	sock := filepath.Join(dir, "mcpd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(grpc.Creds(api.PeerCredentials(nil)))
	mcpdv1.RegisterMcpdServer(srv, &fakeMcpd{})
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }() // owned: the cleanup waits for it
	t.Cleanup(func() {
		srv.Stop()
		if err := <-done; err != nil && !errors.Is(err, grpc.ErrServerStopped) {
			t.Errorf("serve: %v", err)
		}
	})

	// A copy of this test binary that uid 65534 can execute.
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(binDir, "mcpdctl.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	mcpdctlAs := func(uid int, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"-test.run=^$", "--"}, args...)...)
		cmd.Env = append(os.Environ(), envRunAs+"=1", paths.EnvSocket+"="+sock)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		cmd.Dir = binDir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("mcpdctl as uid %d: %v", uid, err)
		}
		return stderr.String(), cmd.ProcessState.ExitCode()
	}

	got, code := mcpdctlAs(nobody, "status")
	t.Logf("mcpdctl status as uid %d: %s", nobody, got)
	if code != exitFailure || strings.Contains(got, "not running") ||
		!strings.Contains(got, "belongs to uid 0") || !strings.Contains(got, "this is uid 65534") {
		t.Errorf("mcpdctl status as uid %d = exit %d, %q; want exit 1 saying the socket is uid 0's and why this uid is refused", nobody, code, got)
	}

	// With the directory closed again, the socket cannot even be reached.
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	got, code = mcpdctlAs(nobody, "status")
	if code != exitFailure || strings.Contains(got, "not running") || !strings.Contains(got, "permission denied") {
		t.Errorf("mcpdctl status as uid %d on a closed directory = exit %d, %q; want exit 1 saying permission denied", nobody, code, got)
	}
}

// openTempDir returns a fresh directory of mode 0755 under the system's
// temporary directory, removed when the test ends.
func openTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mcpdctl-uid")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}
