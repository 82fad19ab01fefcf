package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/sandbox"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// sandboxDaemon starts mcpd on servers (raw config entries) with HOME a
// fresh dir, so that the servers' state dirs are the test's.
func sandboxDaemon(t *testing.T, home string, servers map[string]map[string]any) *daemon {
	t.Helper()
	dir := tempdir.Short(t)
	data, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"--socket", filepath.Join(dir, "run", "mcpd.sock"), "--config", config, "--log-level", "debug", "--http-listen", "off"}
	cmd := exec.Command(mcpdBin, args...)
	cmd.Env = append(daemonEnv(), "HOME="+home, "XDG_STATE_HOME=")
	d := spawnCmd(t, cmd, args[1], config)
	d.waitServing()
	return d
}

// buildProbe builds the sandbox probe server (internal/sandbox/testdata),
// skipping without Landlock.
func buildProbe(t *testing.T) string {
	t.Helper()
	skipShort(t)
	if sandbox.ABI() < 4 {
		t.Skipf("the kernel's Landlock ABI is %d; these tests need 4", sandbox.ABI())
	}
	bin := filepath.Join(t.TempDir(), "probe")
	if out, err := exec.Command("go", "build", "-o", bin, "../../sandbox/testdata/probe").CombinedOutput(); err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	return bin
}

// callText calls tool and returns its first text, whether the result is an
// error, and the call's error.
func sandboxCall(t *testing.T, c mcpdv1.McpdClient, server, tool string, args any) (string, bool, error) {
	t.Helper()
	a, _ := json.Marshal(args)
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: server, Tool: tool, ArgumentsJson: string(a)})
	if err != nil {
		return "", false, err
	}
	if resp.GetError() != nil {
		return resp.GetError().GetMessage(), true, nil
	}
	var r struct {
		IsError bool `json:"isError"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(resp.GetResultJson()), &r); err != nil || len(r.Content) == 0 {
		t.Fatalf("%s/%s: bad result %s", server, tool, resp.GetResultJson())
	}
	return r.Content[0].Text, r.IsError, nil
}

// TestSandboxCgroupLimits: where mcpd can give a server a cgroup with
// the memory and pids controllers, a memory hog is killed and reported as
// such and a fork bomb stops at pids; where it cannot, a server with
// limits does not start and says why, and one with bestEffort starts and
// says what is not applied.
func TestSandboxCgroupLimits(t *testing.T) {
	probe := buildProbe(t)
	home := t.TempDir()
	limited := func(limits map[string]any, bestEffort bool) map[string]any {
		return map[string]any{"command": probe, "sandbox": map[string]any{"limits": limits, "bestEffort": bestEffort}}
	}
	d := sandboxDaemon(t, home, map[string]map[string]any{
		"mem":     limited(map[string]any{"memory": "64MiB"}, false),
		"pids":    limited(map[string]any{"pids": 16}, false),
		"loose":   limited(map[string]any{"memory": "64MiB", "pids": 16}, true),
		"nolimit": {"command": probe, "sandbox": "strict"},
	})
	c := d.client()
	if _, _, err := sandboxCall(t, c, "nolimit", "hog", map[string]any{"n": 1}); err != nil {
		t.Fatalf("strict server without limits: %v", err)
	}
	_, _, err := sandboxCall(t, c, "mem", "hog", map[string]any{"n": 1})
	if err != nil {
		// No cgroup with the controllers here: refused, with the reason.
		st := d.serverStatus(c, "mem")
		if st.GetState() != mcpdv1.ServerState_SERVER_STATE_FAILED || !strings.Contains(st.GetLastError(), "sandbox cannot be honoured") ||
			!strings.Contains(st.GetLastError(), "cgroup") {
			t.Fatalf("mem: state %s last_error %q, want failed: sandbox cannot be honoured (cgroup ...)", st.GetState(), st.GetLastError())
		}
		if !strings.Contains(err.Error(), "sandbox cannot be honoured") {
			t.Errorf("call error %q does not say why", err)
		}
		if got, isErr, err := sandboxCall(t, c, "loose", "hog", map[string]any{"n": 1}); err != nil || isErr {
			t.Fatalf("best-effort server: %q %v", got, err)
		}
		if sb := d.serverStatus(c, "loose").GetSandbox(); !strings.Contains(sb, "best effort, not applied: memory/pids/cpu limits") {
			t.Errorf("best-effort sandbox status = %q, want what is not applied", sb)
		}
		if !strings.Contains(d.stderr.String(), "sandbox is best effort") {
			t.Error("the log does not say the sandbox is best effort")
		}
		t.Skipf("no cgroup limits here, so no hog or fork bomb to stop: %s", st.GetLastError())
	}

	_, _, err = sandboxCall(t, c, "mem", "hog", map[string]any{"n": 256})
	if err == nil {
		t.Fatal("256 MiB under a 64 MiB limit: the call succeeded")
	}
	poll(t, "mem's exit reason", func() (bool, error) {
		return d.serverStatus(c, "mem").GetLastExit() == "killed: memory limit 64 MiB", nil
	})
	got, isErr, err := sandboxCall(t, c, "pids", "spawn", map[string]any{"n": 64})
	if err != nil || !isErr || !strings.Contains(got, "resource temporarily unavailable") {
		t.Errorf("64 children under pids 16 = %q (error result %v, %v), want the fork refused", got, isErr, err)
	}
}

// TestSandboxStrictNpmServers: server-everything and server-memory run
// under "strict" started through npx, and server-filesystem, told to
// serve a whole dir, is kept by its sandbox to the part it may read.
func TestSandboxStrictNpmServers(t *testing.T) {
	skipShort(t)
	if sandbox.ABI() < 4 {
		t.Skipf("the kernel's Landlock ABI is %d; this test needs 4", sandbox.ABI())
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	npx, err := exec.LookPath("npx")
	for _, pkg := range []string{"server-everything", "server-memory", "server-filesystem"} {
		if _, serr := os.Stat(filepath.Join(root, "node_modules", "@modelcontextprotocol", pkg)); err != nil || serr != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("npx or %s missing in CI (npm ci)", pkg)
			}
			t.Skipf("npx or @modelcontextprotocol/%s missing: run npm ci", pkg)
		}
	}
	home := t.TempDir()
	served := t.TempDir()
	for path, data := range map[string]string{"allowed/ok.txt": "fine", "secret/id_rsa": "KEY"} {
		p := filepath.Join(served, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	memFile := filepath.Join(home, ".local", "state", "mcpd", "servers", "memory", "memory.json")
	fs := func(sb any) map[string]any {
		s := map[string]any{"command": npx, "args": []string{"-y", "@modelcontextprotocol/server-filesystem", served}, "cwd": root}
		if sb != nil {
			s["sandbox"] = sb
		}
		return s
	}
	d := sandboxDaemon(t, home, map[string]map[string]any{
		"everything": {"command": npx, "args": []string{"-y", "@modelcontextprotocol/server-everything"}, "cwd": root, "sandbox": "strict"},
		"memory": {"command": npx, "args": []string{"-y", "@modelcontextprotocol/server-memory"}, "cwd": root, "sandbox": "strict",
			"env": map[string]string{"MEMORY_FILE_PATH": memFile}},
		"fs":      fs(map[string]any{"read": []string{filepath.Join(served, "allowed")}}),
		"fs-free": fs(nil),
	})
	c := d.client()
	if got, isErr, err := sandboxCall(t, c, "everything", "echo", map[string]any{"message": "hi"}); err != nil || isErr || !strings.Contains(got, "hi") {
		t.Errorf("everything echo = %q (%v, %v)", got, isErr, err)
	}
	entities := map[string]any{"entities": []any{map[string]any{"name": "a", "entityType": "t", "observations": []string{"o"}}}}
	if got, isErr, err := sandboxCall(t, c, "memory", "create_entities", entities); err != nil || isErr {
		t.Errorf("memory create_entities = %q (%v, %v)", got, isErr, err)
	}
	if _, err := os.Stat(memFile); err != nil {
		t.Errorf("server-memory wrote nothing to its state dir: %v", err)
	}
	secret := map[string]any{"path": filepath.Join(served, "secret", "id_rsa")}
	if got, _, err := sandboxCall(t, c, "fs", "read_text_file", secret); err != nil || !strings.Contains(got, "EACCES") && !strings.Contains(got, "permission denied") {
		t.Errorf("sandboxed server-filesystem read the secret: %q (%v)", got, err)
	}
	if got, isErr, err := sandboxCall(t, c, "fs", "read_text_file", map[string]any{"path": filepath.Join(served, "allowed", "ok.txt")}); err != nil || isErr || got != "fine" {
		t.Errorf("sandboxed server-filesystem read of an allowed file = %q (%v, %v)", got, isErr, err)
	}
	if got, isErr, err := sandboxCall(t, c, "fs-free", "read_text_file", secret); err != nil || isErr || got != "KEY" {
		t.Errorf("unsandboxed server-filesystem read = %q (%v, %v), want the file (the denial must be the sandbox's)", got, isErr, err)
	}
	for _, name := range []string{"everything", "memory", "fs"} {
		if sb := d.serverStatus(c, name).GetSandbox(); !strings.Contains(sb, "landlock ABI") {
			t.Errorf("%s: status sandbox = %q", name, sb)
		}
	}
}
