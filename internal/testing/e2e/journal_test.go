package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Under systemd (JOURNAL_STREAM naming mcpd's stderr) every line of mcpd
// starts with its syslog priority, then a JSON object with an ISO-8601
// "ts"; and a shutdown says "mcpd stopping" and "mcpd stopped" at info and
// nothing else of mcpd's own at info.
func TestDaemonLogsForJournald(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	cfg := writeConfig(t, dir, map[string]server{"echo": {Mode: "legacy", Autostart: true}})
	logf, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(logf.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	d := startLoggingDaemon(t, dir, cfg, logf, fmt.Sprintf("JOURNAL_STREAM=%d:%d", uint64(st.Dev), st.Ino)) // Dev is not uint64 everywhere
	c := mcpdv1.NewMcpdClient(dialSocket(t, d.socket))
	poll(t, "echo ready", func() (bool, error) {
		resp, err := c.GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{})
		return err == nil && len(resp.GetServers()) == 1 && resp.GetServers()[0].GetState() == mcpdv1.ServerState_SERVER_STATE_READY, err
	})
	if err := d.stop(t); err != nil {
		t.Fatalf("mcpd: %v", err)
	}
	out, err := os.ReadFile(logf.Name())
	if err != nil {
		t.Fatal(err)
	}
	prefix := regexp.MustCompile(`^<([3467])>`)
	levels := map[string]string{"3": "error", "4": "warn", "6": "info", "7": "debug"}
	var shutdownInfo []string
	stopping := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		m := prefix.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("line without a syslog priority: %q", line)
			continue
		}
		var e struct {
			Level, TS, Msg, Logger, Server string
		}
		if err := json.Unmarshal([]byte(line[len(m[0]):]), &e); err != nil {
			t.Errorf("line %q: %v", line, err)
			continue
		}
		if levels[m[1]] != e.Level {
			t.Errorf("line %q: priority <%s> for level %s", line, m[1], e.Level)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.000Z0700", e.TS); err != nil {
			t.Errorf("line %q: ts not ISO-8601: %v", line, err)
		}
		stopping = stopping || e.Msg == "mcpd stopping"
		if stopping && e.Level == "info" && e.Server == "" {
			shutdownInfo = append(shutdownInfo, e.Msg)
		}
	}
	if want := []string{"mcpd stopping", "mcpd stopped"}; strings.Join(shutdownInfo, "|") != strings.Join(want, "|") {
		t.Errorf("shutdown lines at info = %q, want %q", shutdownInfo, want)
	}
	if t.Failed() {
		t.Logf("mcpd output:\n%s", out)
	}
}

// loggingDaemon is mcpd with its stdout and stderr on a file of the test's.
type loggingDaemon struct {
	cmd    *exec.Cmd
	socket string
	exited chan struct{} // closed once cmd is waited for
	err    error         // cmd's exit, set before exited is closed
}

// startLoggingDaemon starts mcpd at debug level on config in dir, with
// its stdout and stderr on out and env added to its environment, and
// waits until it serves. The test's cleanup kills it if it still runs.
func startLoggingDaemon(t *testing.T, dir, config string, out *os.File, env ...string) *loggingDaemon {
	t.Helper()
	d := &loggingDaemon{socket: filepath.Join(dir, "run", "mcpd.sock"), exited: make(chan struct{})}
	d.cmd = exec.Command(mcpdBin, "--socket", d.socket, "--config", config, "--log-level", "debug", "--http-listen", "off",
		"--state-dir", filepath.Join(dir, "state"))
	d.cmd.Env = append(daemonEnv(), env...)
	d.cmd.Stdout, d.cmd.Stderr = out, out
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // owned: the cleanup waits for it
		d.err = d.cmd.Wait()
		close(d.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			d.cmd.Process.Kill()
			<-d.exited
		}
	})
	waitServing(t, d.socket, d.exited)
	return d
}

// stop sends mcpd SIGTERM and returns its exit.
func (d *loggingDaemon) stop(t *testing.T) error {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.exited:
	case <-time.After(waitTimeout):
		t.Fatal("mcpd did not exit after SIGTERM")
	}
	return d.err
}
