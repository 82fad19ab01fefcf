package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// unboundedConfig is a config path mcpd must refuse rather than read: one
// that blocks (a FIFO without a writer) or never ends (/dev/zero, a huge
// file).
type unboundedConfig struct {
	name string
	// make creates the thing at path.
	make func(t *testing.T, path string)
	// reason is what the error must say about it.
	reason string
}

var unboundedConfigs = []unboundedConfig{
	{"dev_zero", func(t *testing.T, path string) {
		if err := os.Symlink("/dev/zero", path); err != nil {
			t.Fatal(err)
		}
	}, "not a regular file: it is a character device"},
	{"fifo", func(t *testing.T, path string) {
		if err := syscall.Mkfifo(path, 0o600); err != nil {
			t.Fatal(err)
		}
	}, "not a regular file: it is a named pipe"},
	{"100MB", func(t *testing.T, path string) {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(100 << 20); err != nil { // sparse: nothing written
			t.Fatal(err)
		}
	}, "file too large: 104857600 bytes, more than the limit of 4 MiB"},
}

// TestStartupRefusesUnboundedConfig: mcpd started on /dev/zero (through a
// symlink), a FIFO or a 100 MB file refuses to read it, instead of running
// out of memory or hanging, and serves no servers: status names the file
// and the reason, and SIGTERM ends mcpd with status 0.
func TestStartupRefusesUnboundedConfig(t *testing.T) {
	skipShort(t)
	for _, tt := range unboundedConfigs {
		t.Run(tt.name, func(t *testing.T) {
			dir := tempdir.Short(t)
			config := filepath.Join(dir, "config.json")
			tt.make(t, config)
			d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), config)
			d.waitServing()
			st := d.status(d.client())
			want := "read config " + config + ": " + tt.reason
			if !strings.Contains(st.GetConfigError(), want) || len(st.GetServers()) != 0 {
				t.Errorf("status: config_error %q with %d servers, want %q and none", st.GetConfigError(), len(st.GetServers()), want)
			}
			if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := d.wait(); err != nil {
				t.Fatalf("mcpd after SIGTERM: %v, want exit status 0", err)
			}
		})
	}
}

// TestReloadRefusesUnboundedConfig: the config of a running mcpd replaced
// by one of the unbounded configs, then SIGHUP and the Reload RPC: the old
// config keeps serving, status and the RPC report the error, and SIGTERM
// still ends mcpd with status 0.
func TestReloadRefusesUnboundedConfig(t *testing.T) {
	skipShort(t)
	for _, tt := range unboundedConfigs {
		t.Run(tt.name, func(t *testing.T) {
			d := startWith(t, map[string]entry{"echo": {"dual", map[string]any{"autostart": true}}})
			c := d.client()
			poll(t, "echo ready", func() (bool, error) { return ready(d.serverStatus(c, "echo")), nil })

			// Replace the config in one rename, as an editor would.
			tmp := filepath.Join(d.dir, ".config.json.tmp")
			tt.make(t, tmp)
			if err := os.Rename(tmp, d.config); err != nil {
				t.Fatal(err)
			}
			if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			want := "read config " + d.config + ": " + tt.reason
			poll(t, "config error in status", func() (bool, error) {
				return strings.Contains(d.status(c).GetConfigError(), want), nil
			})
			rr, err := c.ReloadConfig(ctxT(t), &mcpdv1.ReloadConfigRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if rr.GetApplied() || !strings.Contains(rr.GetError(), want) {
				t.Errorf("ReloadConfig = %v, want not applied with error %q", rr, want)
			}
			// The old config keeps serving.
			resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs("still here")})
			if err != nil || text(t, resp) != "still here" {
				t.Fatalf("call under the old config: %v %v", resp, err)
			}
			pid := int(d.serverStatus(c, "echo").GetPid())

			if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if err := d.wait(); err != nil {
				t.Fatalf("mcpd after SIGTERM: %v, want exit status 0", err)
			}
			if alive(pid) {
				t.Errorf("child %d alive after mcpd exited", pid)
			}
		})
	}
}
