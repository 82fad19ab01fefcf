package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

const unsetProblem = "env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set (set it in mcpd's environment, e.g. in ~/.config/mcpd/env under systemd, or give a default: ${GITHUB_TOKEN:-default})"

// configFailMcpd answers like mcpd with one server failed by its config
// beside a ready one.
type configFailMcpd struct {
	mcpdv1.UnimplementedMcpdServer
}

func (configFailMcpd) GetStatus(context.Context, *mcpdv1.GetStatusRequest) (*mcpdv1.GetStatusResponse, error) {
	return &mcpdv1.GetStatusResponse{ConfigPath: "/c.json", Servers: []*mcpdv1.ServerStatus{
		{Name: "gh", State: mcpdv1.ServerState_SERVER_STATE_FAILED, ConfigError: unsetProblem,
			LastError: `server "gh": config: ` + unsetProblem},
		{Name: "ok", State: mcpdv1.ServerState_SERVER_STATE_READY, Pid: 42},
	}}, nil
}

func (configFailMcpd) CheckConfig(_ context.Context, r *mcpdv1.CheckConfigRequest) (*mcpdv1.CheckConfigResponse, error) {
	return &mcpdv1.CheckConfigResponse{ConfigPath: "/c.json", Error: "/c.json: 1 problem(s) in 1 of 2 servers",
		Problems: []*mcpdv1.ConfigProblem{{Path: "/c.json", Server: "gh", Key: "env.GITHUB_TOKEN", Message: "${GITHUB_TOKEN} is not set"}},
		Diff:     &mcpdv1.ConfigDiff{Unchanged: []string{"gh", "ok"}}}, nil
}

// status shows a server failed by its config, with the whole reason: the
// variable and where to set it.
func TestStatusShowsConfigProblem(t *testing.T) {
	sock := mcpdtest.Serve(t, configFailMcpd{})
	r := mcpdctl(t, "--socket", sock, "status")
	if r.code != exitOK {
		t.Fatalf("status: exit %d, stderr %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "gh: config: "+unsetProblem+"\n") {
		t.Errorf("status does not show gh's config problem in full:\n%s", r.stdout)
	}
	var ghLine string
	for l := range strings.Lines(r.stdout) {
		if strings.HasPrefix(l, "gh ") {
			ghLine = l
		}
	}
	if !strings.Contains(ghLine, "failed") {
		t.Errorf("gh's row %q does not say failed", ghLine)
	}
	r = mcpdctl(t, "--socket", sock, "status", "--json")
	if !strings.Contains(r.stdout, `"config_error": "env.GITHUB_TOKEN: ${GITHUB_TOKEN} is not set`) {
		t.Errorf("status --json lacks config_error:\n%s", r.stdout)
	}
}

// config check lists the problems, then the servers without any, exit 1.
func TestConfigCheckListsServersProblems(t *testing.T) {
	sock := mcpdtest.Serve(t, configFailMcpd{})
	r := mcpdctl(t, "--socket", sock, "config", "check")
	if r.code != exitFailure || !strings.Contains(r.stderr, `/c.json: server "gh": key "env.GITHUB_TOKEN": ${GITHUB_TOKEN} is not set`) ||
		r.stdout != "/c.json: servers without problems: ok\n" {
		t.Errorf("config check: %+v", r)
	}

	// Without mcpd, the same, checked here: one problem of each kind.
	dir := t.TempDir()
	file := filepath.Join(dir, "c.json")
	data := `{"mcpServers": {
		"ok": {"command": "/bin/sh"},
		"unset": {"command": "/bin/sh", "env": {"T": "${MCPDCTL_TEST_UNSET}"}},
		"nocmd": {"command": "mcpdctl-test-no-such-command"},
		"badkey": {"command": "/bin/sh", "autostrat": true},
		"badtype": {"command": "/bin/sh", "args": 1},
		"off": {"command": "/bin/sh", "disabled": true, "env": {"T": "${MCPDCTL_TEST_UNSET}"}}
	}}`
	if err := os.WriteFile(file, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	r = mcpdctl(t, "--socket", filepath.Join(dir, "none.sock"), "config", "check", file)
	for _, want := range []string{`server "unset": key "env.T": ${MCPDCTL_TEST_UNSET} is not set`,
		`server "nocmd": key "command": "mcpdctl-test-no-such-command" not found`,
		`server "badkey": unknown key "autostrat"`, `server "badtype": key "args": want an array of strings, got number`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("config check without mcpd: stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if r.code != exitFailure || r.stdout != file+": servers without problems: off, ok\n" {
		t.Errorf("config check without mcpd: exit %d stdout %q", r.code, r.stdout)
	}
}
