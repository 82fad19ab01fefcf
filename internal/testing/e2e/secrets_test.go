package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/secrets"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/keyring"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// secretsSetup is one test's mcpd, mcpdctl environment and config.
type secretsSetup struct {
	t      *testing.T
	dir    string
	env    []string // mcpd's and mcpdctl's
	socket string
}

func newSecretsSetup(t *testing.T, busAddr string) *secretsSetup {
	t.Helper()
	bridgeBins(t) // mcpdctl
	dir := tempdir.Short(t)
	env := append(daemonEnv(), "DBUS_SESSION_BUS_ADDRESS="+busAddr, "XDG_STATE_HOME="+filepath.Join(dir, "xdg"))
	return &secretsSetup{t: t, dir: dir, env: env, socket: filepath.Join(dir, "run", "mcpd.sock")}
}

// ctl runs mcpdctl with stdin and returns its combined output.
func (s *secretsSetup) ctl(stdin string, args ...string) (string, error) {
	cmd := exec.Command(mcpdctlBin, append([]string{"--socket", s.socket}, args...)...)
	cmd.Env = s.env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// start starts mcpd, with the state dir mcpdctl uses too, on a config of
// fake servers whose env holds the given extra entries.
func (s *secretsSetup) start(envs map[string]map[string]string) *daemon {
	s.t.Helper()
	servers := map[string]any{}
	for name, extra := range envs {
		e := fakeServer("modern")
		env := e["env"].(map[string]string)
		for k, v := range extra {
			env[k] = v
		}
		e["autostart"] = true
		servers[name] = e
	}
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		s.t.Fatal(err)
	}
	cfg := filepath.Join(s.dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		s.t.Fatal(err)
	}
	cmd := exec.Command(mcpdBin, "--socket", s.socket, "--config", cfg, "--log-level", "debug", "--http-listen", "off",
		"--state-dir", filepath.Join(s.dir, "xdg", "mcpd"))
	cmd.Env = s.env
	d := spawnCmd(s.t, cmd, s.socket, cfg)
	d.waitServing()
	return d
}

// waitState waits for server to reach state and returns its status.
func waitState(t *testing.T, d *daemon, c mcpdv1.McpdClient, server string, state mcpdv1.ServerState) *mcpdv1.ServerStatus {
	t.Helper()
	var st *mcpdv1.ServerStatus
	poll(t, server+" "+state.String(), func() (bool, error) {
		st = d.serverStatus(c, server)
		return st.GetState() == state, nil
	})
	return st
}

// childEnv returns the environment of the process pid.
func childEnv(t *testing.T, pid int64) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	return "\x00" + string(b)
}

// TestSecretsKeyringEndToEnd: "mcpdctl secret set" stores into the
// desktop keyring what secret-tool finds; mcpd puts it into a server's
// environment at start; a missing secret and a locked keyring fail only
// their server, saying what to do; no value reaches mcpd's debug log,
// status or errors.
func TestSecretsKeyringEndToEnd(t *testing.T) {
	skipShort(t)
	k := keyring.Start(t)
	s := newSecretsSetup(t, k.Addr)
	const value = "e2e-keyring-value-8a7b6c"
	if out, err := s.ctl(value+"\n", "secret", "set", "API_TOKEN"); err != nil || !strings.Contains(out, "stored API_TOKEN in Secret Service") {
		t.Fatalf("secret set: %v: %s", err, out)
	}
	if got, err := k.Lookup(context.Background(), "API_TOKEN"); err != nil || got != value {
		t.Fatalf("secret-tool lookup = %q, %v", got, err)
	}
	d := s.start(map[string]map[string]string{
		"ok":      {"API_TOKEN": "${secret:API_TOKEN}"},
		"missing": {"OTHER": "${secret:NOPE}"},
	})
	c := d.client()
	ok := waitState(t, d, c, "ok", mcpdv1.ServerState_SERVER_STATE_READY)
	if env := childEnv(t, ok.GetPid()); !strings.Contains(env, "\x00API_TOKEN="+value+"\x00") {
		t.Errorf("the child's environment has no API_TOKEN=<the secret>")
	}
	missing := waitState(t, d, c, "missing", mcpdv1.ServerState_SERVER_STATE_FAILED)
	if e := missing.GetLastError(); !strings.Contains(e, "secret NOPE not found (mcpdctl secret set NOPE)") {
		t.Errorf("missing: last error %q", e)
	}
	if b := d.status(c).GetSecrets(); !strings.HasPrefix(b, "Secret Service (gnome-keyring") {
		t.Errorf("status secrets %q", b)
	}
	if b := d.status(c).GetOauthTokens(); !strings.HasPrefix(b, "Secret Service (gnome-keyring") || !strings.HasSuffix(b, "item service=mcpd kind=oauth") {
		t.Errorf("status oauth_tokens %q", b)
	}

	// A locked keyring: the restart fails with what to do, without a
	// prompt and without blocking mcpd.
	st := secrets.Open(secrets.Options{BusAddress: k.Addr, File: filepath.Join(t.TempDir(), "unused")})
	defer st.Close()
	if err := st.Lock(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, err := s.ctl("", "restart", "ok")
	if err == nil || !strings.Contains(out, `start "ok": secret API_TOKEN: the keyring is locked (unlock your keyring)`) {
		t.Errorf("restart with the keyring locked: %v: %s", err, out)
	}
	if e := waitState(t, d, c, "ok", mcpdv1.ServerState_SERVER_STATE_FAILED).GetLastError(); !strings.Contains(e, "unlock your keyring") {
		t.Errorf("locked: last error %q", e)
	}

	var seen strings.Builder
	for _, args := range [][]string{{"status"}, {"status", "--json"}, {"config", "check"}, {"logs", "ok"}, {"secret", "get", "API_TOKEN"}} {
		out, _ := s.ctl("", args...)
		fmt.Fprintf(&seen, "$ mcpdctl %s\n%s", strings.Join(args, " "), out)
	}
	if !strings.Contains(seen.String(), "secrets Secret Service (gnome-keyring") || !strings.Contains(seen.String(), "oauth tokens Secret Service (gnome-keyring") {
		t.Errorf("mcpdctl status names no secret store:\n%s", seen.String())
	}
	for what, text := range map[string]string{"mcpdctl output": seen.String(), "mcpd's debug log": d.stderr.String()} {
		if strings.Contains(text, value) {
			t.Errorf("%s holds the secret value:\n%s", what, text)
		}
	}
}

// TestSecretsFileFallbackEndToEnd: with no session bus, mcpdctl and mcpd
// share the 0600 file in the state directory, and status says so.
func TestSecretsFileFallbackEndToEnd(t *testing.T) {
	skipShort(t)
	s := newSecretsSetup(t, "unix:path=/nonexistent/mcpd-e2e-bus")
	const value = "e2e-file-value-1d2e3f"
	file := filepath.Join(s.dir, "xdg", "mcpd", secrets.FileName)
	if out, err := s.ctl(value+"\n", "secret", "set", "FILE_TOKEN"); err != nil || !strings.Contains(out, "stored FILE_TOKEN in file "+file) {
		t.Fatalf("secret set: %v: %s", err, out)
	}
	if out, err := s.ctl("", "secret", "ls"); err != nil || !strings.HasPrefix(out, "# file "+file+" (no session bus") || !strings.HasSuffix(out, "\nFILE_TOKEN\n") {
		t.Errorf("secret ls: %v: %s", err, out)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("%s: %v %v", file, fi, err)
	}
	d := s.start(map[string]map[string]string{"f": {"TOKEN": "${secret:FILE_TOKEN}", fakemcp.EnvMode: "modern"}})
	c := d.client()
	st := waitState(t, d, c, "f", mcpdv1.ServerState_SERVER_STATE_READY)
	if env := childEnv(t, st.GetPid()); !strings.Contains(env, "\x00TOKEN="+value+"\x00") {
		t.Errorf("the child's environment has no TOKEN=<the secret>")
	}
	if b := d.status(c).GetSecrets(); !strings.HasPrefix(b, "file "+file+" (no session bus") {
		t.Errorf("status secrets %q", b)
	}
	if b := d.status(c).GetOauthTokens(); !strings.HasPrefix(b, "file "+filepath.Join(s.dir, "xdg", "mcpd", "oauth.json")+" (no session bus") {
		t.Errorf("status oauth_tokens %q", b)
	}
	if strings.Contains(d.stderr.String(), value) {
		t.Errorf("mcpd's debug log holds the secret value")
	}
}
