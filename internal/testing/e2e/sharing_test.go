package e2e

import (
	"os/exec"
	"regexp"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Three MCP hosts, each through its own mcpdctl bridge on mcpd's bridge
// socket, use the same two stdio servers: mcpd runs 2 processes where the
// hosts would run 6, and mcpdctl status says so with the measured memory.
func TestStatusSharingThroughBridges(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"a": fakeServer("legacy,quiet"), "b": fakeServer("legacy,quiet")})
	for _, name := range []string{"ide", "desktop", "agent"} {
		cs, _ := goHost(t, d, name, true, "a", "b")
		if _, err := cs.ListTools(ctxT(t), &mcp.ListToolsParams{}); err != nil {
			t.Fatalf("%s: tools/list: %v", name, err)
		}
	}
	sh := d.status(d.client()).GetSharing()
	if sh.GetApps() != 3 || sh.GetHosts() != 3 || sh.GetProcesses() != 2 || sh.GetProcessesWithoutMcpd() != 6 {
		t.Errorf("sharing = %v, want 3 apps (3 hosts) using 2 processes, 6 without mcpd", sh)
	}
	if sh.GetRssBytes() <= 0 || sh.GetRssBytesWithoutMcpd() < 2*sh.GetRssBytes() {
		t.Errorf("sharing memory = %v, want some, about 3 times as much without mcpd", sh)
	}

	cmd := exec.Command(mcpdctlBin, "--socket", d.socket, "status")
	cmd.Env = daemonEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpdctl status: %v", err)
	}
	want := regexp.MustCompile(`(?m)^sharing: 3 apps \(3 hosts\) use 2 server processes \([0-9.]+ MiB\); without mcpd: 6 processes \(~[0-9.]+ MiB\)$`)
	if !want.Match(out) {
		t.Errorf("mcpdctl status has no line %s:\n%s", want, out)
	}
}
