package e2e

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// replaceConfig writes a config file the way editors and atomic writers do:
// a temporary file renamed over the old one.
func replaceConfig(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".config.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func serverNames(d *daemon, c mcpdv1.McpdClient) []string {
	var names []string
	for _, s := range d.status(c).GetServers() {
		names = append(names, s.GetName())
	}
	return names
}

func TestConfigReload(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, map[string]server{"keep": {Mode: "dual", Autostart: true}})
	c := d.client()
	var keepPid int64
	poll(t, "keep ready", func() (bool, error) {
		st := d.serverStatus(c, "keep")
		keepPid = st.GetPid()
		return st.GetState() == mcpdv1.ServerState_SERVER_STATE_READY, nil
	})

	// A saved change is applied; the untouched server keeps its process.
	dir := t.TempDir()
	newCfg := writeConfig(t, dir, map[string]server{
		"keep":  {Mode: "dual", Autostart: true},
		"added": {Mode: "dual"},
	})
	data, err := os.ReadFile(newCfg)
	if err != nil {
		t.Fatal(err)
	}
	replaceConfig(t, d.config, data)
	poll(t, "the added server to appear", func() (bool, error) {
		return slices.Equal(serverNames(d, c), []string{"added", "keep"}), nil
	})
	if st := d.serverStatus(c, "keep"); st.GetPid() != keepPid {
		t.Errorf("untouched server restarted: pid %d -> %d", keepPid, st.GetPid())
	}
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "added", Tool: "echo", ArgumentsJson: echoArgs("new")})
	if err != nil || text(t, resp) != "new" {
		t.Fatalf("call to the added server: %v %v", resp, err)
	}

	// An invalid config is reported and the running one kept.
	replaceConfig(t, d.config, []byte(`{"mcpServers": {"keep": {"command": 42}}}`))
	poll(t, "the config error in status", func() (bool, error) {
		return strings.Contains(d.status(c).GetConfigError(), d.config), nil
	})
	if names := serverNames(d, c); !slices.Equal(names, []string{"added", "keep"}) {
		t.Errorf("servers after an invalid config = %v, want the running set", names)
	}

	// Fixing it clears the error; SIGHUP reloads too.
	replaceConfig(t, d.config, data)
	poll(t, "the config error to clear", func() (bool, error) {
		return d.status(c).GetConfigError() == "", nil
	})
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, "the SIGHUP reload to be logged", func() (bool, error) {
		return strings.Count(d.stderr.String(), `"msg":"config reloaded"`) >= 3, nil
	})
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}
