package e2e

import (
	"context"
	"crypto/sha256"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/testing/hostcli"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
)

// memoryJS is server-memory from npm, relative to the repository.
const memoryJS = "node_modules/@modelcontextprotocol/server-memory/dist/index.js"

// realHosts are the host CLIs the connect test drives, each by its own
// command ("claude mcp list", "gemini mcp list", …), offline and without
// a login: hostcli says what each needs (Claude Code runs on Node 22,
// Gemini CLI and Qwen Code need the folder trusted).
var realHosts = []string{"claude", "gemini", "qwen", "opencode", "codex"}

// TestConnectRealHosts configures real hosts with two real servers
// (server-everything and server-memory) directly, connects them all with
// "mcpdctl connect --all", and checks with each host's own command that
// both entries are connected through mcpd under their own names; mcpd
// then runs one process per server, however many hosts use it.
// "disconnect --all" gives every file back byte for byte when no host
// ran in between, and the entries when the hosts rewrote their files; the
// hosts reach the servers directly again.
func TestConnectRealHosts(t *testing.T) {
	bridgeBins(t)
	node := requireNode(t)
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	var runners []*hostcli.Runner
	for _, id := range realHosts {
		runners = append(runners, hostcli.Find(t, repo, id))
	}
	home := tempdir.Short(t)
	work := filepath.Join(home, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	entries := []hostcli.Entry{
		{Name: "everything", Command: node, Args: []string{filepath.Join(repo, everythingJS), "stdio"}},
		{Name: "memory", Command: node, Args: []string{filepath.Join(repo, memoryJS)},
			Env: map[string]string{"MEMORY_FILE_PATH": filepath.Join(home, "memory.jsonl")}},
	}
	for _, r := range runners {
		if err := r.Prepare(home, work); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		if err := r.WriteConfig(home, work, entries); err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
	}
	direct := listAll(t, runners, home, work, "direct")
	if len(direct) == 0 {
		t.Fatal("no host showed the tools it lists (Codex's app-server does)")
	}
	// The files as the hosts left them: some add keys of their own on a
	// run (Claude Code its state, Qwen Code "$version", opencode
	// "$schema").
	sums := map[string][32]byte{}
	for _, r := range runners {
		sums[r.ID] = fileSum(t, r.ConfigPath(home, work))
	}

	cfg := filepath.Join(home, ".config", "mcpd", "config.json")
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte("{\"mcpServers\": {}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(home, "run", "mcpd.sock")
	d := spawnDaemon(t, socket, cfg, "--http-listen", "127.0.0.1:0")
	d.waitServing()
	ctl := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(mcpdctlBin, args...)
		cmd.Dir = work
		cmd.Env = append(daemonEnv(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"),
			"XDG_STATE_HOME="+filepath.Join(home, ".local", "state"), "MCPD_SOCKET="+socket, "MCPD_CONFIG="+cfg)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("mcpdctl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	// Undone before any host runs: every file byte for byte.
	ctl("connect", "--all")
	ctl("disconnect", "--all")
	for _, r := range runners {
		if fileSum(t, r.ConfigPath(home, work)) != sums[r.ID] {
			t.Errorf("%s: disconnect did not give %s back byte for byte", r.Name, r.ConfigPath(home, work))
		}
	}

	t.Logf("connect:\n%s", ctl("connect", "--all"))
	for _, r := range runners {
		data, _ := os.ReadFile(r.ConfigPath(home, work))
		if strings.Contains(string(data), "server-memory") || strings.Contains(string(data), "server-everything") {
			t.Errorf("%s still runs a server itself after connect:\n%s", r.Name, data)
		}
	}
	// The tool names a host shows keep their names: no prefix, no tool
	// lost. A legacy server that gates tools on the client's capabilities
	// (server-everything's roots and sampling tools) shows every host the
	// variant for what mcpd declares to it, which may hold more.
	for key, names := range listAll(t, runners, home, work, "through mcpd") {
		for _, n := range direct[key] {
			if !slices.Contains(names, n) {
				t.Errorf("%s: tool %q listed directly is missing through mcpd (%v)", key, n, names)
			}
		}
		if extra := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(direct[key], n) }); len(extra) > 0 {
			t.Logf("%s: through mcpd also %v (gated on capabilities mcpd declares)", key, extra)
		}
	}

	c := d.client()
	pids := map[string]int64{}
	for _, s := range d.status(c).GetServers() {
		pids[s.GetName()] = s.GetPid()
	}
	if len(pids) != 2 || pids["everything"] == 0 || pids["memory"] == 0 {
		t.Fatalf("mcpd's servers after %d hosts listed theirs: %v, want everything and memory, one process each", len(runners), pids)
	}
	t.Logf("%d hosts × 2 servers: mcpd runs 2 server processes (%v)", len(runners), pids)

	// Undone after the hosts ran and rewrote their files: the entries
	// connect rewrote come back.
	t.Logf("disconnect:\n%s", ctl("disconnect", "--all"))
	listAll(t, runners, home, work, "direct again")
	for _, s := range d.status(c).GetServers() {
		if p := s.GetPid(); p != 0 && p != pids[s.GetName()] {
			t.Errorf("server %s restarted (pid %d, then %d)", s.GetName(), pids[s.GetName()], p)
		}
	}
}

// listAll runs each host's own list command and wants every entry
// connected; it returns the tool names each host showed, by host and
// entry, where its command shows them.
func listAll(t *testing.T, runners []*hostcli.Runner, home, work, when string) map[string][]string {
	t.Helper()
	tools := map[string][]string{}
	for _, r := range runners {
		got, out, err := listConnected(r, home, work)
		if err != nil {
			t.Fatalf("%s (%s): %v\n%s", r.Name, when, err, out)
		}
		for _, name := range []string{"everything", "memory"} {
			s, ok := got[name]
			if !ok || s.State != hostcli.Connected {
				t.Errorf("%s (%s): %s is %v, want connected\n%s", r.Name, when, name, s, out)
			}
			if len(s.Tools) > 0 {
				tools[r.ID+"/"+name] = s.Tools
			}
		}
	}
	return tools
}

// listConnected runs r's list command, once more when an entry is not
// connected: a host gives a server a bounded time to start, which a
// loaded machine can exceed.
func listConnected(r *hostcli.Runner, home, work string) (map[string]hostcli.Status, string, error) {
	var got map[string]hostcli.Status
	var out string
	var err error
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		got, out, err = r.List(ctx, home, work)
		cancel()
		if err == nil && got["everything"].State == hostcli.Connected && got["memory"].State == hostcli.Connected {
			break
		}
	}
	return got, out, err
}

func fileSum(t *testing.T, path string) [32]byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(data)
}

// TestSharingRealServers is the figure README shows: three hosts, each
// through its own "mcpdctl bridge everything memory", are served by two
// processes of server-everything and server-memory where they would run
// six, and mcpdctl status says so with the processes' measured memory.
func TestSharingRealServers(t *testing.T) {
	node := requireNode(t)
	repo, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	d := startBridgeDaemon(t, map[string]map[string]any{
		"everything": {"command": node, "args": []string{filepath.Join(repo, everythingJS), "stdio"}},
		"memory": {"command": node, "args": []string{filepath.Join(repo, memoryJS)},
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}},
	})
	for _, host := range []string{"claude-code", "gemini-cli", "codex"} {
		cs, _ := goHost(t, d, host, true, "everything", "memory")
		if _, err := cs.ListTools(ctxT(t), &mcp.ListToolsParams{}); err != nil {
			t.Fatalf("%s: tools/list: %v", host, err)
		}
	}
	sh := d.status(d.client()).GetSharing()
	if sh.GetApps() != 3 || sh.GetProcesses() != 2 || sh.GetProcessesWithoutMcpd() != 6 {
		t.Errorf("sharing = %v, want 3 apps using 2 processes, 6 without mcpd", sh)
	}
	cmd := exec.Command(mcpdctlBin, "--socket", d.socket, "status")
	cmd.Env = daemonEnv()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcpdctl status: %v", err)
	}
	for line := range strings.Lines(string(out)) {
		if strings.HasPrefix(line, "sharing: ") {
			t.Logf("%s", line)
			return
		}
	}
	t.Errorf("mcpdctl status has no sharing line:\n%s", out)
}
