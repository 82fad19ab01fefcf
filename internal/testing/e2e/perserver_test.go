package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// problemConfig is a config of good fake servers beside one server of each
// kind of problem; fix adds entries over them.
func problemConfig(t *testing.T, fix map[string]map[string]any) []byte {
	t.Helper()
	bin, args := fakemcp.Command()
	fake := func(extra map[string]any) map[string]any {
		s := map[string]any{"command": bin, "args": args, "env": map[string]string{fakemcp.EnvMode: "dual"}}
		for k, v := range extra {
			s[k] = v
		}
		return s
	}
	m := map[string]any{
		"good": fake(map[string]any{"autostart": true}),
		"lazy": fake(nil),
		"unset": fake(map[string]any{"autostart": true,
			"env": map[string]string{fakemcp.EnvMode: "dual", "TOKEN": "${MCPD_E2E_UNSET}"}}),
		"nocmd":   map[string]any{"command": "mcpd-e2e-no-such-command", "autostart": true},
		"badkey":  fake(map[string]any{"autostrat": true}),
		"badtype": fake(map[string]any{"autostart": "yes"}),
		// Disabled: validated, not expanded, so the unset variable is fine.
		"off": fake(map[string]any{"disabled": true, "env": map[string]string{"TOKEN": "${MCPD_E2E_UNSET}"}}),
	}
	for name, extra := range fix {
		m[name] = fake(extra)
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": m}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// wantProblems are what status must say of each server with a problem.
var wantProblems = map[string]string{
	"unset":   "env.TOKEN: ${MCPD_E2E_UNSET} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd",
	"nocmd":   `command: "mcpd-e2e-no-such-command" not found in mcpd's PATH`,
	"badkey":  `unknown key "autostrat", did you mean "autostart"?`,
	"badtype": "autostart: want a boolean, got string",
}

// checkProblems checks that status shows every server of wantProblems
// (but those in fixed) failed with its config problem, and no other.
func checkProblems(t *testing.T, st *mcpdv1.GetStatusResponse, fixed ...string) {
	t.Helper()
	if st.GetConfigError() != "" {
		t.Errorf("config_error = %q, want none: the file is usable", st.GetConfigError())
	}
	for name, s := range servers(st) {
		want, bad := wantProblems[name]
		for _, f := range fixed {
			bad = bad && f != name
		}
		switch {
		case bad && (s.GetState() != mcpdv1.ServerState_SERVER_STATE_FAILED || !strings.Contains(s.GetConfigError(), want) ||
			!strings.Contains(s.GetLastError(), `server "`+name+`": config: `+want)):
			t.Errorf("%s: state %s config_error %q last_error %q, want failed with %q",
				name, s.GetState(), s.GetConfigError(), s.GetLastError(), want)
		case !bad && s.GetConfigError() != "":
			t.Errorf("%s: config_error %q, want none", name, s.GetConfigError())
		}
	}
}

// TestServerProblemsStayTheirs: mcpd started on a config where some servers
// have problems (an unset variable, a command not found, a bad key, a value
// of the wrong type) serves the others, at start-up and after reloads;
// status names each problem, and calls to such a server say it.
func TestServerProblemsStayTheirs(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, problemConfig(t, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), config)
	d.waitServing()
	c := d.client()
	poll(t, "good ready", func() (bool, error) { return ready(d.serverStatus(c, "good")), nil })
	checkProblems(t, d.status(c))
	if off := d.serverStatus(c, "off"); off.GetState() != mcpdv1.ServerState_SERVER_STATE_STOPPED || !off.GetDisabled() {
		t.Errorf("disabled server with an unset variable: %v, want stopped and disabled", off)
	}
	for _, name := range []string{"good", "lazy"} {
		resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: name, Tool: "echo", ArgumentsJson: echoArgs("hi")})
		if err != nil || text(t, resp) != "hi" {
			t.Fatalf("call to %s: %v %v", name, resp, err)
		}
	}
	_, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "unset", Tool: "echo", ArgumentsJson: echoArgs("hi")})
	if err == nil || !strings.Contains(err.Error(), `server "unset": config: `+wantProblems["unset"]) {
		t.Errorf("call to unset: %v, want the config problem", err)
	}

	// config check lists every problem, and says the file has some.
	cr, err := c.CheckConfig(ctxT(t), &mcpdv1.CheckConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range cr.GetProblems() {
		got[p.GetServer()] = p.GetKey() + ": " + p.GetMessage()
	}
	if cr.GetValid() || len(got) != len(wantProblems) || !strings.Contains(cr.GetError(), "4 of 7 servers") {
		t.Errorf("CheckConfig = %v, want invalid with a problem for each of %d servers", cr, len(wantProblems))
	}
	if u := cr.GetDiff().GetUnchanged(); len(u) != 7 {
		t.Errorf("CheckConfig diff unchanged = %v, want every server", u)
	}

	// A reload fixing one of them starts it (autostart); the good ones keep
	// their process.
	goodPid := d.serverStatus(c, "good").GetPid()
	saveAsEditor(t, config, problemConfig(t, map[string]map[string]any{"unset": {"autostart": true,
		"env": map[string]string{fakemcp.EnvMode: "dual", "TOKEN": "${MCPD_E2E_UNSET:-fallback}"}}}))
	poll(t, "unset fixed and ready", func() (bool, error) { return ready(d.serverStatus(c, "unset")), nil })
	st := d.status(c)
	checkProblems(t, st, "unset")
	if s := servers(st)["good"]; s.GetPid() != goodPid {
		t.Errorf("good: pid %d after a reload that did not change it, want %d", s.GetPid(), goodPid)
	}
	rr, err := c.ReloadConfig(ctxT(t), &mcpdv1.ReloadConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !rr.GetApplied() || len(rr.GetProblems()) != 3 {
		t.Errorf("ReloadConfig = %v, want applied with 3 problems", rr)
	}

	// A reload breaking a running server stops it and fails it.
	saveAsEditor(t, config, problemConfig(t, map[string]map[string]any{"good": {"restart": 1}}))
	poll(t, "good failed", func() (bool, error) {
		s := d.serverStatus(c, "good")
		return s.GetState() == mcpdv1.ServerState_SERVER_STATE_FAILED && strings.Contains(s.GetConfigError(), "restart: want a string, got number"), nil
	})
	poll(t, "good's child gone", func() (bool, error) { return !alive(int(goodPid)), nil })
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "lazy", Tool: "echo", ArgumentsJson: echoArgs("still")})
	if err != nil || text(t, resp) != "still" {
		t.Fatalf("call to lazy after good broke: %v %v", resp, err)
	}
}

// TestStartupSyntaxErrorServesNothing: mcpd started on a file that cannot
// be parsed runs with no servers, status says why (file, line:column), and
// the fixed file is picked up.
func TestStartupSyntaxErrorServesNothing(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, []byte("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",,}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), config)
	d.waitServing()
	c := d.client()
	st := d.status(c)
	if want := config + ":3:26: invalid character ','"; !strings.Contains(st.GetConfigError(), want) || len(st.GetServers()) != 0 {
		t.Errorf("status: config_error %q with %d servers, want %q and none", st.GetConfigError(), len(st.GetServers()), want)
	}
	saveAsEditor(t, config, configJSON(t, map[string]entry{"echo": {"dual", nil}}))
	poll(t, "fixed config applied", func() (bool, error) {
		st := d.status(c)
		return st.GetConfigError() == "" && len(st.GetServers()) == 1, nil
	})
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(); err != nil {
		t.Fatalf("mcpd after SIGTERM: %v, want exit status 0", err)
	}
}
