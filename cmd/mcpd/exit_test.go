package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// envRunMcpd makes the test binary run mcpd's main with its arguments.
const envRunMcpd = "MCPD_TEST_RUN_MCPD"

// mcpdCommand is the test binary run as mcpd with args, its config,
// state and runtime directories in a fresh temporary directory.
func mcpdCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(must(t, os.Executable), args...)
	cmd.Env = append(os.Environ(), envRunMcpd+"=1",
		"XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_STATE_HOME="+filepath.Join(dir, "state"),
		"XDG_RUNTIME_DIR="+filepath.Join(dir, "run"), "MCPD_CONFIG=", "MCPD_SOCKET=", "NOTIFY_SOCKET=")
	return cmd
}

// exitStatus runs cmd and returns its exit status and stderr.
func exitStatus(t *testing.T, cmd *exec.Cmd) (int, string) {
	t.Helper()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("run mcpd: %v", err)
	}
	return cmd.ProcessState.ExitCode(), stderr.String()
}

// mcpd exits 2 on a usage error, 1 when it cannot serve, and 0 for --help,
// which says so.
func TestExitStatus(t *testing.T) {
	notDir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		code int
		want string // in stderr
	}{
		{[]string{"--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"--procs", "many"}, exitUsage, "invalid value"},
		{[]string{"--procs", "-1"}, exitUsage, "mcpd: --procs must be 0"},
		{[]string{"--log-level", "loud"}, exitUsage, `mcpd: invalid --log-level "loud"`},
		{[]string{"--metrics-listen", "0.0.0.0:9464"}, exitUsage, "mcpd: "},
		{[]string{"extra"}, exitUsage, `mcpd: unexpected argument "extra"`},
		{[]string{"--socket", filepath.Join(notDir, "mcpd.sock"), "--http-listen", "off"}, exitFailure, "mcpd: "},
		{[]string{"--help"}, 0, "Exit status: 0 after a clean stop"},
	} {
		code, stderr := exitStatus(t, mcpdCommand(t, tt.args...))
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("mcpd %s: exit %d, stderr:\n%s\nwant exit %d and %q", strings.Join(tt.args, " "), code, stderr, tt.code, tt.want)
		}
	}
}

// mcpd stopped by SIGTERM while serving exits 0.
func TestExitStatusCleanStop(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "run", "mcpd.sock")
	cmd := mcpdCommand(t, "--socket", sock, "--http-listen", "off")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() && !strings.Contains(sc.Text(), `"msg":"serving"`) {
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for sc.Scan() { // to EOF: Wait closes the pipe
	}
	err = cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("mcpd stopped by SIGTERM: exit %d (%v), want 0", code, err)
	}
}
