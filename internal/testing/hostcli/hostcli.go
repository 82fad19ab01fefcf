// Package hostcli drives real MCP host CLIs (Claude Code, Gemini CLI, Qwen
// Code, opencode, Codex), installed from the npm registry into the
// repository's node_modules, through their own commands: it writes their
// user-level MCP configuration, lists the servers each host sees and reads
// back whether each one connected. It runs them offline, with no login, no
// LLM key and no prompt, in a throwaway HOME. It is used by tests only.
//
// What each host reads, in which shape, and what it prints is written down
// on the host's entry in Hosts (hosts.go) and in docs/hosts-cli-facts.md.
package hostcli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// State is what a host says about one configured server.
type State int

const (
	// Other is any state that is neither connected nor failed (disabled,
	// needs authentication, still connecting...); Status.Text says which.
	Other State = iota
	// Connected: the host completed the MCP handshake with the server.
	Connected
	// Failed: the host could not start or reach the server.
	Failed
)

func (s State) String() string {
	switch s {
	case Connected:
		return "connected"
	case Failed:
		return "failed"
	}
	return "other"
}

// Status is one server's state as its host reported it; Text is the host's
// own words for it (status and error message, ANSI colours removed).
type Status struct {
	State State
	Text  string
	// Tools are the names of the tools the host lists for the server,
	// where its command shows them (Codex's app-server), sorted.
	Tools []string
}

func (s Status) String() string { return s.State.String() + ": " + s.Text }

// Entry is one MCP server in a host's user configuration: a stdio server
// (Command, Args, Env) or, when URL is set, a Streamable HTTP server (URL,
// Headers).
type Entry struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

// Host is one MCP host CLI.
type Host struct {
	ID      string // short name: claude, gemini, qwen, opencode, codex
	Name    string // product name
	Package string // npm package (pinned in package.json)
	Bin     string // its program in node_modules/.bin

	// Env is what the host needs to run offline with no login, no prompt,
	// no update check and no telemetry (on top of HOME, PATH and the common
	// variables Runner sets).
	Env []string

	homeEnv    func(home string) []string // variables that depend on HOME
	configPath func(home, workdir string) string
	prepare    func(home, workdir string) error
	write      func(path string, entries []Entry) error
	list       func(ctx context.Context, r *Runner, home, workdir string) (map[string]Status, string, error)
}

// Runner runs one installed host.
type Runner struct {
	Host
	RepoRoot string
	Path     string // the host's program
	NodeBin  string // directory of Node 22 (node_modules/node/bin), first on PATH
}

// ByID returns the host with that ID, or nil.
func ByID(id string) *Host {
	for i := range Hosts {
		if Hosts[i].ID == id {
			return &Hosts[i]
		}
	}
	return nil
}

// Find returns a Runner for the host id installed in repoRoot/node_modules.
// When it is not installed (npm ci not run) the test is skipped, unless
// MCPD_REQUIRE_HOSTS=1, when it fails.
func Find(t testing.TB, repoRoot string, id string) *Runner {
	t.Helper()
	h := ByID(id)
	if h == nil {
		t.Fatalf("hostcli: unknown host %q", id)
	}
	nodeBin := filepath.Join(repoRoot, "node_modules", "node", "bin")
	bin := filepath.Join(repoRoot, "node_modules", ".bin", h.Bin)
	var missing []string
	for _, p := range []string{bin, filepath.Join(nodeBin, "node")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode()&0o111 == 0 {
			missing = append(missing, p)
		}
	}
	// Claude Code's and opencode's programs are placeholders that only
	// print an error until their postinstall copies the native binary in.
	if fi, err := os.Stat(bin); err == nil && fi.Size() < 4096 {
		if b, err := os.ReadFile(bin); err == nil && strings.Contains(string(b), "postinstall") {
			missing = append(missing, bin+" (a placeholder: its postinstall did not run)")
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("%s (npm package %s) is not installed: %s missing; run npm ci in %s",
			h.Name, h.Package, strings.Join(missing, ", "), repoRoot)
		if os.Getenv("MCPD_REQUIRE_HOSTS") == "1" {
			t.Fatalf("%s (MCPD_REQUIRE_HOSTS=1)", msg)
		}
		t.Skip(msg + " (MCPD_REQUIRE_HOSTS=1 makes this a failure)")
	}
	return &Runner{Host: *h, RepoRoot: repoRoot, Path: bin, NodeBin: nodeBin}
}

// ConfigPath is the user-level file in which the host, run with HOME=home
// in workdir, reads its MCP servers.
func (r *Runner) ConfigPath(home, workdir string) string { return r.configPath(home, workdir) }

// Prepare writes what the host needs under home to run offline in workdir
// (a trusted folder, for instance), but no MCP entry.
func (r *Runner) Prepare(home, workdir string) error {
	if r.prepare == nil {
		return nil
	}
	return r.prepare(home, workdir)
}

// WriteConfig sets the MCP servers of the host's user configuration
// (ConfigPath) to entries, in the host's own format. The other settings of
// a JSON file are kept; Codex's config.toml is replaced.
func (r *Runner) WriteConfig(home, workdir string, entries []Entry) error {
	p := r.ConfigPath(home, workdir)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return r.write(p, entries)
}

// List runs the host's own listing of its MCP servers (mcp list, or
// Codex's app-server) with HOME=home in workdir, offline, bounded by ctx.
// It returns each server's status by name and the host's raw output. The
// host runs in its own process group; on return that group, and any
// process started with this call's environment or working in workdir, has
// been killed.
func (r *Runner) List(ctx context.Context, home, workdir string) (map[string]Status, string, error) {
	return r.list(ctx, r, home, workdir)
}

// env is the whole environment the host runs with: nothing is inherited
// but PATH (with Node 22 first), so that no variable of the caller's moves
// the host's configuration (XDG_CONFIG_HOME, CODEX_HOME, ...) or logs it in.
func (r *Runner) env(home, marker string) []string {
	env := []string{
		"HOME=" + home,
		"PATH=" + r.NodeBin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"TMPDIR=" + os.TempDir(),
		"LANG=C.UTF-8",
		"TERM=dumb",
		"NO_COLOR=1",
		"CI=1",
		"NO_UPDATE_NOTIFIER=1",
		markerVar + "=" + marker,
	}
	env = append(env, r.Host.Env...)
	if r.homeEnv != nil {
		env = append(env, r.homeEnv(home)...)
	}
	return env
}

// markerVar is set, to a value unique to one List call, in the environment
// of the host, and so of the servers it starts unless it filters their
// environment, so that they can all be found and killed.
const markerVar = "MCPD_HOSTCLI_RUN"

func newMarker() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// runCmd runs the host with args to completion (or ctx's end) and returns
// its stdout and stderr together, as the host wrote them.
func (r *Runner) runCmd(ctx context.Context, home, workdir string, args ...string) (string, error) {
	marker := newMarker()
	cmd := newCmd(r, home, workdir, marker, args...)
	// A file, not a pipe: a server that inherits the host's stdout or
	// stderr cannot hold up Wait.
	out, err := os.CreateTemp("", "hostcli-out-")
	if err != nil {
		return "", err
	}
	defer os.Remove(out.Name())
	defer out.Close()
	cmd.Stdout = out
	cmd.Stderr = out
	if err := startInGroup(cmd); err != nil {
		return "", err
	}
	defer reap(cmd.Process.Pid, marker, workdir)
	err = waitCtx(ctx, cmd)
	b, rerr := os.ReadFile(out.Name())
	if err == nil {
		err = rerr
	}
	return string(b), err
}

func newCmd(r *Runner, home, workdir, marker string, args ...string) *exec.Cmd {
	cmd := exec.Command(r.Path, args...)
	cmd.Dir = workdir
	cmd.Env = r.env(home, marker)
	return cmd
}

// startInGroup starts cmd as the leader of a new process group.
func startInGroup(cmd *exec.Cmd) error {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd.Start()
}

// waitCtx waits for cmd, killing its process group when ctx ends first.
func waitCtx(ctx context.Context, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return fmt.Errorf("%s: %w", filepath.Base(cmd.Path), ctx.Err())
	}
}

// reap kills the process group pgid and every other process that carries
// marker in its environment or works in workdir (the servers a host
// started, even in a group of their own), until none is left or 5 s pass.
func reap(pgid int, marker, workdir string) {
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := Leftovers(marker, workdir)
		if len(left) == 0 || time.Now().After(deadline) {
			return
		}
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Leftovers returns the live processes, other than this one, that carry
// MCPD_HOSTCLI_RUN=marker in their environment (when marker is not empty)
// or whose working directory is workdir or below it (when workdir is not
// empty and does not contain this process's own working directory).
func Leftovers(marker, workdir string) []int {
	self := os.Getpid()
	var needle []byte
	if marker != "" {
		needle = []byte("\x00" + markerVar + "=" + marker + "\x00")
	}
	if workdir != "" {
		workdir = filepath.Clean(workdir)
		if cwd, err := os.Getwd(); err != nil || workdir == "/" || within(cwd, workdir) {
			workdir = ""
		}
	}
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil || pid == self || pid <= 1 {
			continue
		}
		dir := "/proc/" + e.Name()
		if zombie(dir) {
			continue
		}
		hit := false
		if needle != nil {
			if b, err := os.ReadFile(dir + "/environ"); err == nil {
				hit = strings.Contains("\x00"+string(b), string(needle))
			}
		}
		if !hit && workdir != "" {
			if cwd, err := os.Readlink(dir + "/cwd"); err == nil && within(cwd, workdir) {
				hit = true
			}
		}
		if hit {
			pids = append(pids, pid)
		}
	}
	return pids
}

func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

func zombie(procDir string) bool {
	b, err := os.ReadFile(procDir + "/stat")
	if err != nil {
		return true // gone
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07`)

// stripANSI removes terminal colour and control sequences.
func stripANSI(s string) string { return ansi.ReplaceAllString(s, "") }
