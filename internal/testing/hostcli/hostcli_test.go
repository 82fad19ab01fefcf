package hostcli

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// serveEverythingHTTP starts server-everything's Streamable HTTP mode
// (PORT=port, path /mcp) and returns its URL; it is killed at cleanup.
func serveEverythingHTTP(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(root, "node_modules", ".bin", "mcp-server-everything")
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("MCPD_REQUIRE_HOSTS") == "1" {
			t.Fatalf("%s missing (MCPD_REQUIRE_HOSTS=1)", bin)
		}
		t.Skipf("%s missing; run npm ci", bin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port),
		"PATH="+filepath.Join(root, "node_modules", "node", "bin")+":"+os.Getenv("PATH"))
	cmd.Dir = t.TempDir()
	if err := startInGroup(cmd); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for deadline := time.Now().Add(30 * time.Second); ; {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			break
		}
		select {
		case <-done:
			t.Fatal("server-everything streamableHttp exited")
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("server-everything streamableHttp not listening on %s", addr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "http://" + addr + "/mcp"
}

// TestHostsListRealServers writes, in each host's own format, a user
// configuration with server-everything and server-memory (stdio),
// server-everything's Streamable HTTP endpoint, and a command that does
// not exist, and checks what the host's own listing says of each.
func TestHostsListRealServers(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every host CLI (-short)")
	}
	root := repoRoot(t)
	url := serveEverythingHTTP(t, root)
	bin := filepath.Join(root, "node_modules", ".bin")
	entries := []Entry{
		{Name: "everything", Command: filepath.Join(bin, "mcp-server-everything")},
		{Name: "memory", Command: filepath.Join(bin, "mcp-server-memory"), Env: map[string]string{"MEMORY_FILE_PATH": "MEMORY"}},
		{Name: "everything-http", URL: url},
		{Name: "missing", Command: "/nonexistent/mcpd-hostcli-missing-server"},
	}
	for _, h := range Hosts {
		t.Run(h.ID, func(t *testing.T) {
			t.Parallel()
			r := Find(t, root, h.ID)
			home, workdir := t.TempDir(), t.TempDir()
			es := append([]Entry(nil), entries...)
			es[1].Env = map[string]string{"MEMORY_FILE_PATH": filepath.Join(workdir, "memory.jsonl")}
			if err := r.Prepare(home, workdir); err != nil {
				t.Fatal(err)
			}
			if err := r.WriteConfig(home, workdir, es); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			st, raw, err := r.List(ctx, home, workdir)
			t.Logf("%s: List took %v", h.Name, time.Since(start).Round(time.Millisecond))
			if err != nil {
				t.Fatalf("List: %v\n%s", err, raw)
			}
			for _, name := range []string{"everything", "memory", "everything-http"} {
				if st[name].State != Connected {
					t.Errorf("%s: %s is %v, want connected", h.Name, name, st[name])
				}
			}
			if st["missing"].State != Failed {
				t.Errorf("%s: missing is %v, want failed", h.Name, st["missing"])
			}
			if len(st) != len(es) {
				t.Errorf("%s: %d servers listed, want %d: %v", h.Name, len(st), len(es), st)
			}
			if t.Failed() {
				t.Logf("raw output:\n%s", raw)
			}
			if left := Leftovers("", workdir); len(left) > 0 {
				t.Errorf("%s: processes left working in %s: %v", h.Name, workdir, left)
			}
		})
	}
}

// TestListBoundedByContext checks that a List whose context ends returns
// promptly and leaves nothing behind.
func TestListBoundedByContext(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a host CLI (-short)")
	}
	root := repoRoot(t)
	r := Find(t, root, "claude")
	home, workdir := t.TempDir(), t.TempDir()
	if err := r.Prepare(home, workdir); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(root, "node_modules", ".bin")
	if err := r.WriteConfig(home, workdir, []Entry{{Name: "memory", Command: filepath.Join(bin, "mcp-server-memory")}}); err != nil {
		t.Fatal(err)
	}
	// Shorter than any host takes to start, connect and list, even on a
	// quiet machine.
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := r.List(ctx, home, workdir)
	if err == nil {
		t.Fatal("List with a 400ms deadline succeeded")
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("List took %v after its deadline", d)
	}
	if left := Leftovers("", workdir); len(left) > 0 {
		t.Errorf("processes left working in %s: %v", workdir, left)
	}
}

func TestFindSkipsOrFails(t *testing.T) {
	if os.Getenv("MCPD_REQUIRE_HOSTS") == "1" {
		t.Skip("MCPD_REQUIRE_HOSTS=1: Find fails instead of skipping")
	}
	skipped := false
	t.Run("absent", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Find(t, t.TempDir(), "claude")
	})
	if !skipped {
		t.Fatal("Find did not skip for a repository without node_modules")
	}
}

// The outputs below are the hosts' own, as recorded from the pinned
// versions (ANSI colours kept where the host writes them).

func TestParseClaude(t *testing.T) {
	raw := "Checking MCP server health…\n\n" +
		"everything: /r/node_modules/.bin/mcp-server-everything  - ✔ Connected\n" +
		"ev-http: http://127.0.0.1:39123/mcp (HTTP) - ✔ Connected\n" +
		"broken: /nonexistent/cmd  - ✘ Failed to connect — ENOENT: no such file or directory, posix_spawn '/nonexistent/cmd'\n" +
		"\nMCP config diagnostics ⚠\n\n[Has warnings] User config (available in all your projects)\n" +
		"Location: /tmp/x/.claude.json\n └ [Warning] [a] mcpServers.a: Missing environment variables: X\n"
	want := map[string]State{"everything": Connected, "ev-http": Connected, "broken": Failed}
	checkParsed(t, parseClaude(raw), want)
}

func TestParseGeminiLike(t *testing.T) {
	raw := "Configured MCP servers:\n\n" +
		"✓ everything: /r/mcp-server-everything  (stdio) - Connected\n" +
		"✓ ev-http: http://127.0.0.1:39123/mcp (http) - Connected\n" +
		"✗ broken: /nonexistent/cmd  (stdio) - Disconnected\n" +
		"○ off: /r/mcp-server-memory  (stdio) - Disabled\n" +
		"\x1b[32m✓\x1b[0m qwen: /r/mcp-server-memory  (stdio) - Connected\n"
	want := map[string]State{"everything": Connected, "ev-http": Connected, "broken": Failed, "off": Other, "qwen": Connected}
	checkParsed(t, parseGeminiLike(raw), want)
}

func TestParseOpencode(t *testing.T) {
	raw := "┌  MCP Servers\n│\n" +
		"●  ✓ memory \x1b[90mconnected\n│      \x1b[90m/r/mcp-server-memory\n│\n" +
		"●  ✗ broken \x1b[90mfailed\n│      ENOENT: no such file or directory, posix_spawn '/nonexistent/cmd'\n│      \x1b[90m/nonexistent/cmd\n│\n" +
		"└  2 server(s)\n"
	st := parseOpencode(raw)
	checkParsed(t, st, map[string]State{"memory": Connected, "broken": Failed})
	if !strings.Contains(st["broken"].Text, "ENOENT") {
		t.Errorf("broken's text %q lacks the error", st["broken"].Text)
	}
}

func checkParsed(t *testing.T, got map[string]Status, want map[string]State) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("parsed %v, want %v", got, want)
	}
	for name, s := range want {
		if got[name].State != s {
			t.Errorf("%s: %v, want %v", name, got[name], s)
		}
	}
}
