package main

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/importer"
)

// connectHome is a throwaway home with the files of two hosts that share
// one server (Claude Code and Gemini CLI), mcpd stopped and its config
// empty.
type connectHome struct {
	dir, claude, gemini, config string
}

const claudeJSON = `{
  "numStartups": 3,
  "mcpServers": {
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"]
    }
  },
  "projects": {
    "/work/app": {
      "allowedTools": ["mcp__memory__read_graph"],
      "mcpServers": {}
    }
  }
}
`

const geminiJSON = `{
  // Gemini CLI allows comments
  "mcpServers": {
    "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"], "trust": true},
    "fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "timeout": 30000}
  },
  "ui": {"theme": "Default"}
}
`

func newConnectHome(t *testing.T) *connectHome {
	t.Helper()
	dir := t.TempDir()
	h := &connectHome{dir: dir, claude: filepath.Join(dir, ".claude.json"),
		gemini: filepath.Join(dir, ".gemini", "settings.json"), config: filepath.Join(dir, ".config", "mcpd", "config.json")}
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, ".local", "state"))
	t.Setenv("MCPD_SOCKET", filepath.Join(dir, "no-mcpd", "mcpd.sock"))
	t.Setenv("MCPD_CONFIG", h.config)
	writeTestFile(t, h.claude, claudeJSON)
	writeTestFile(t, h.gemini, geminiJSON)
	return h
}

func writeTestFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func sum(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return "absent"
	}
	if err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(data)
	return string(s[:])
}

func (h *connectHome) sums(t *testing.T) [3]string {
	return [3]string{sum(t, h.claude), sum(t, h.gemini), sum(t, h.config)}
}

// mcpdServers are the servers of mcpd's config.
func (h *connectHome) mcpdServers(t *testing.T) map[string]importer.Server {
	t.Helper()
	data, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct{ McpServers map[string]importer.Server }
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.McpServers
}

func TestConnectDisconnectAll(t *testing.T) {
	h := newConnectHome(t)
	before := h.sums(t)
	r := mcpdctl(t, "connect", "--all")
	if r.code != 0 {
		t.Fatalf("connect: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	servers := h.mcpdServers(t)
	if len(servers) != 2 || servers["memory"].Command != "npx" || servers["fetch"].Command != "uvx" {
		t.Fatalf("mcpd's servers: %+v, want memory (shared by both hosts) and fetch", servers)
	}
	gem, _ := os.ReadFile(h.gemini)
	for _, want := range []string{"// Gemini CLI allows comments", `"trust": true`, `"timeout": 30000`, `"ui": {"theme": "Default"}`,
		`"httpUrl": "http://127.0.0.1:6273/servers/memory/mcp"`, `"httpUrl": "http://127.0.0.1:6273/servers/fetch/mcp"`} {
		if !strings.Contains(string(gem), want) {
			t.Errorf("connected Gemini settings lack %s:\n%s", want, gem)
		}
	}
	if strings.Contains(string(gem), "npx") {
		t.Errorf("Gemini still runs npx:\n%s", gem)
	}
	connected := h.sums(t)
	if r := mcpdctl(t, "connect", "--all"); r.code != 0 || h.sums(t) != connected {
		t.Fatalf("a second connect changed files (exit %d)\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = mcpdctl(t, "hosts", "--json")
	var rows []hostRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || len(rows) != 2 {
		t.Fatalf("hosts --json: %v\n%s", err, r.stdout)
	}
	for _, row := range rows {
		if row.Servers != row.ViaMcpd || !row.Connected {
			t.Errorf("hosts: %+v, want every entry through mcpd", row)
		}
	}
	if r := mcpdctl(t, "disconnect", "--all"); r.code != 0 {
		t.Fatalf("disconnect: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after := h.sums(t)
	if after[0] != before[0] || after[1] != before[1] {
		t.Fatal("disconnect did not restore the hosts' files byte for byte")
	}
	if len(h.mcpdServers(t)) != 2 {
		t.Fatal("disconnect removed mcpd's servers without --remove-servers")
	}
}

func TestConnectDryRunChangesNothing(t *testing.T) {
	h := newConnectHome(t)
	before := h.sums(t)
	r := mcpdctl(t, "connect", "--all", "--dry-run")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"--- " + h.claude, "+++ " + h.gemini, "--- " + h.config, `+      "url": "http://127.0.0.1:6273/servers/memory/mcp"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %q:\n%s", want, r.stdout)
		}
	}
	if h.sums(t) != before {
		t.Fatal("--dry-run changed a file")
	}
}

func TestConnectProblemChangesNothing(t *testing.T) {
	tests := []struct {
		name, want string
		spoil      func(h *connectHome)
	}{
		{"malformed", "not valid JSON", func(h *connectHome) { writeTestFile(t, h.gemini, `{"mcpServers": {`) }},
		{"read-only", "is read-only", func(h *connectHome) { os.Chmod(h.gemini, 0o400) }},
		{"clash", `mcpd's server "fetch" (command "node other.js") is another server`, func(h *connectHome) {
			writeTestFile(t, h.config, `{"mcpServers": {"fetch": {"command": "node", "args": ["other.js"]}}}`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newConnectHome(t)
			tt.spoil(h)
			before := h.sums(t)
			r := mcpdctl(t, "connect", "--all")
			if r.code != 1 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, "nothing changed") {
				t.Fatalf("exit %d, want 1 and %q:\n%s%s", r.code, tt.want, r.stdout, r.stderr)
			}
			if h.sums(t) != before {
				t.Fatal("a file changed")
			}
		})
	}
}

func TestDisconnectKeepsWhatTheUserChanged(t *testing.T) {
	h := newConnectHome(t)
	if r := mcpdctl(t, "connect", "gemini"); r.code != 0 {
		t.Fatalf("connect: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(h.gemini)
	// The user changes a setting and points fetch elsewhere by hand.
	edited := strings.Replace(string(data), `"theme": "Default"`, `"theme": "Dark"`, 1)
	edited = strings.Replace(edited, `"httpUrl": "http://127.0.0.1:6273/servers/fetch/mcp"`, `"httpUrl": "https://fetch.example/mcp"`, 1)
	writeTestFile(t, h.gemini, edited)
	r := mcpdctl(t, "disconnect", "gemini")
	if r.code != 0 || !strings.Contains(r.stdout, "restored 1 entry") || !strings.Contains(r.stdout, `kept "fetch" in mcpServers: changed since connect`) {
		t.Fatalf("disconnect: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(h.gemini)
	want := strings.Replace(strings.Replace(geminiJSON, `"theme": "Default"`, `"theme": "Dark"`, 1),
		`"fetch": {"command": "uvx", "args": ["mcp-server-fetch"], "timeout": 30000}`, `"fetch": {"httpUrl": "https://fetch.example/mcp", "timeout": 30000}`, 1)
	if string(got) != want {
		t.Fatalf("after disconnect:\n%s\nwant:\n%s", got, want)
	}
}

func TestDisconnectRemoveServers(t *testing.T) {
	h := newConnectHome(t)
	for _, args := range [][]string{{"connect", "--all"}, {"disconnect", "gemini", "--remove-servers"}} {
		if r := mcpdctl(t, args...); r.code != 0 {
			t.Fatalf("%v: %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	// memory is still Claude Code's; fetch was Gemini's alone.
	if s := h.mcpdServers(t); len(s) != 1 || s["memory"].Command == "" {
		t.Fatalf("mcpd's servers after disconnect --remove-servers: %+v, want memory only", s)
	}
}

func TestConnectUsage(t *testing.T) {
	newConnectHome(t)
	for _, args := range [][]string{{"connect"}, {"connect", "nosuchhost"}, {"connect", "--all", "gemini"}, {"disconnect"}} {
		if r := mcpdctl(t, args...); r.code != exitUsage {
			t.Errorf("%v: exit %d, want %d\n%s", args, r.code, exitUsage, r.stderr)
		}
	}
}

// A host that rewrites its file on exit is not connected while it runs
// (a process of that name, as /proc tells), unless --force.
func TestConnectRefusesRunningHost(t *testing.T) {
	h := newConnectHome(t)
	codexCfg := filepath.Join(h.dir, ".codex", "config.toml")
	writeTestFile(t, codexCfg, "model = \"o3\"\n\n[mcp_servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n")
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep command")
	}
	fake := filepath.Join(t.TempDir(), "codex") // its process is named codex
	data, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fake, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fake, "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	before := sum(t, codexCfg)
	r := mcpdctl(t, "connect", "codex")
	if r.code != 1 || !strings.Contains(r.stderr, "is running (pid ") || sum(t, codexCfg) != before {
		t.Fatalf("connect of a running host: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := mcpdctl(t, "connect", "codex", "--force"); r.code != 0 || sum(t, codexCfg) == before {
		t.Fatalf("connect --force: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// connect --aggregate replaces each file's entries by one "mcpd" entry at
// mcpd's aggregate door; a second one changes nothing; disconnect puts
// the files back byte for byte.
func TestConnectAggregate(t *testing.T) {
	h := newConnectHome(t)
	before := h.sums(t)
	r := mcpdctl(t, "connect", "--all", "--aggregate")
	if r.code != 0 {
		t.Fatalf("connect --aggregate: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, `aggregated memory, fetch in one entry "mcpd"`) {
		t.Errorf("connect --aggregate said:\n%s", r.stdout)
	}
	if s := h.mcpdServers(t); len(s) != 2 || s["memory"].Command != "npx" || s["fetch"].Command != "uvx" {
		t.Fatalf("mcpd's servers: %+v", s)
	}
	gem, _ := os.ReadFile(h.gemini)
	want := `{
  // Gemini CLI allows comments
  "mcpServers": {
    "mcpd": {"httpUrl": "http://127.0.0.1:6273/mcp"}
  },
  "ui": {"theme": "Default"}
}
`
	if string(gem) != want {
		t.Errorf("Gemini settings:\n%s\nwant:\n%s", gem, want)
	}
	claude, _ := os.ReadFile(h.claude)
	var cc struct {
		McpServers map[string]map[string]any
	}
	if err := json.Unmarshal(claude, &cc); err != nil || len(cc.McpServers) != 1 || cc.McpServers["mcpd"]["url"] != "http://127.0.0.1:6273/mcp" {
		t.Errorf("Claude Code's servers: %v, %v\n%s", cc.McpServers, err, claude)
	}
	connected := h.sums(t)
	if r := mcpdctl(t, "connect", "--all", "--aggregate"); r.code != 0 || h.sums(t) != connected {
		t.Fatalf("a second connect --aggregate changed files (exit %d)\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := mcpdctl(t, "disconnect", "--all"); r.code != 0 {
		t.Fatalf("disconnect: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := h.sums(t); after[0] != before[0] || after[1] != before[1] {
		t.Fatal("disconnect did not restore the hosts' files byte for byte")
	}
}

// An entry named "mcpd" that is not mcpd's aggregate is refused, and
// nothing changes.
func TestConnectAggregateNameTaken(t *testing.T) {
	h := newConnectHome(t)
	writeTestFile(t, h.gemini, strings.Replace(geminiJSON, `"fetch":`, `"mcpd": {"command": "mcpd-tool"},
    "fetch":`, 1))
	before := h.sums(t)
	r := mcpdctl(t, "connect", "gemini", "--aggregate")
	if r.code != 1 || !strings.Contains(r.stderr, `already has an entry "mcpd" that is not mcpd's aggregate`) || h.sums(t) != before {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// A file the user changed after connect --aggregate gets its entries
// back and loses "mcpd", the user's change kept.
func TestDisconnectAggregateAfterEdit(t *testing.T) {
	h := newConnectHome(t)
	if r := mcpdctl(t, "connect", "gemini", "--aggregate"); r.code != 0 {
		t.Fatalf("connect: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(h.gemini)
	writeTestFile(t, h.gemini, strings.Replace(string(data), `"theme": "Default"`, `"theme": "Dark"`, 1))
	r := mcpdctl(t, "disconnect", "gemini")
	if r.code != 0 || !strings.Contains(r.stdout, "restored 3 entries") {
		t.Fatalf("disconnect: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	got, _ := os.ReadFile(h.gemini)
	want := strings.Replace(geminiJSON, `"theme": "Default"`, `"theme": "Dark"`, 1)
	if string(got) != want {
		t.Fatalf("after disconnect:\n%s\nwant:\n%s", got, want)
	}
}
