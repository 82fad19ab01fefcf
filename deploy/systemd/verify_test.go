// Package systemd holds mcpd's systemd user units; its test checks them
// with systemd-analyze verify.
package systemd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/httpface"
)

// TestUnitsVerify runs "systemd-analyze --user verify" on the units as
// "make install" installs them: a temporary HOME holding an executable
// ~/.local/bin/mcpd (ExecStart=%h/.local/bin/mcpd) and a temporary
// XDG_RUNTIME_DIR (%t of mcpd.socket). Without systemd-analyze the test is
// skipped, unless MCPD_REQUIRE_SYSTEMD is set (CI installs systemd).
func TestUnitsVerify(t *testing.T) {
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("MCPD_REQUIRE_SYSTEMD") != "" {
			t.Fatal("systemd-analyze not found and MCPD_REQUIRE_SYSTEMD is set")
		}
		t.Skip("systemd-analyze not installed")
	}
	home := t.TempDir()
	runtime := t.TempDir()
	bin := filepath.Join(home, ".local", "bin")
	unitDir := filepath.Join(home, ".config", "systemd", "user")
	for _, d := range []string{bin, unitDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(bin, "mcpd"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var units []string
	for _, name := range []string{"mcpd.service", "mcpd.socket", "mcpd-http.socket"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(unitDir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		units = append(units, p)
	}
	cmd := exec.Command(analyze, append([]string{"--user", "verify"}, units...)...)
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_RUNTIME_DIR="+runtime, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "" {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestUnitsContract checks the settings mcpd's behaviour relies on.
func TestUnitsContract(t *testing.T) {
	service, err := os.ReadFile("mcpd.service")
	if err != nil {
		t.Fatal(err)
	}
	s := string(service)
	for _, want := range []string{
		"Type=notify\n",                        // READY=1 after listen + config
		"ExecReload=/bin/kill -HUP $MAINPID\n", // reload = SIGHUP
		"ExecStart=%h/.local/bin/mcpd\n",       // where make install puts it
		"WantedBy=default.target\n",            // user units start on login
		// The servers' variables and PATH, optional (config.EnvFileHint).
		"EnvironmentFile=-%h/.config/mcpd/env\n",
		// Per-server cgroups and the controllers of sandbox limits.
		"Delegate=yes\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("mcpd.service lacks %q", strings.TrimSpace(want))
		}
	}
	for _, bad := range []string{"KillMode=process", "KillMode=none", "MemoryDenyWriteExecute=yes"} {
		// Children must die with the unit; node's JIT needs W+X memory.
		if strings.Contains(s, bad) {
			t.Errorf("mcpd.service has %q", bad)
		}
	}
	// The sockets mcpd takes by name (api.Activated): the API socket at its
	// default path, and the HTTP face on its default loopback address; a
	// socket unit names all its sockets alike, hence one unit each.
	for _, c := range []struct {
		unit string
		want []string
	}{
		{"mcpd.socket", []string{
			"ListenStream=%t/mcpd/mcpd.sock\n", "FileDescriptorName=api\n",
			"Wants=mcpd-http.socket\n", "Also=mcpd-http.socket\n", // one enable, one start
		}},
		{"mcpd-http.socket", []string{
			"ListenStream=" + httpface.DefaultAddr + "\n", "FileDescriptorName=http\n",
			"Service=mcpd.service\n", // the name differs from the service's
		}},
	} {
		data, err := os.ReadFile(c.unit)
		if err != nil {
			t.Fatal(err)
		}
		u := string(data)
		for _, want := range c.want {
			if !strings.Contains(u, want) {
				t.Errorf("%s lacks %q", c.unit, strings.TrimSpace(want))
			}
		}
		if n := strings.Count(u, "\nListenStream="); n != 1 {
			t.Errorf("%s has %d ListenStream=, want 1 (FileDescriptorName= names them all)", c.unit, n)
		}
		for line := range strings.Lines(u) {
			addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ListenStream=")
			if ok && !strings.HasPrefix(addr, "%t/") {
				if _, err := httpface.ParseAddr(addr); err != nil {
					t.Errorf("%s: %v", c.unit, err) // beyond loopback
				}
			}
		}
	}
}

// TestInstallPointsAtBinDir checks that "make install BINDIR=…" writes a
// service whose ExecStart is the mcpd it installed. It runs the unit
// commands "make -n install" prints (not the build, nor the copy of the
// binaries, which a fake stands in for) and verifies the result.
func TestInstallPointsAtBinDir(t *testing.T) {
	makeBin, err := exec.LookPath("make")
	if err != nil {
		t.Skip("make not installed")
	}
	dir := t.TempDir()
	bin, units := filepath.Join(dir, "opt", "bin"), filepath.Join(dir, "units")
	out, err := exec.Command(makeBin, "-s", "-n", "-C", "../..", "install", "BINDIR="+bin, "UNITDIR="+units).Output()
	if err != nil {
		t.Fatalf("make -n install: %v", err)
	}
	var ran int
	for line := range strings.Lines(string(out)) {
		if !strings.Contains(line, units) {
			continue // the build and the binaries' copy
		}
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = "../.."
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", line, err, b)
		}
		ran++
	}
	if ran == 0 {
		t.Fatalf("make -n install printed no command writing to UNITDIR:\n%s", out)
	}
	service, err := os.ReadFile(filepath.Join(units, "mcpd.service"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "ExecStart=" + filepath.Join(bin, "mcpd") + "\n"; !strings.Contains(string(service), want) {
		t.Fatalf("installed mcpd.service lacks %q:\n%s", strings.TrimSpace(want), service)
	}
	for _, u := range []string{"mcpd.socket", "mcpd-http.socket"} {
		if _, err := os.Stat(filepath.Join(units, u)); err != nil {
			t.Fatalf("%s not installed: %v", u, err)
		}
	}
}
