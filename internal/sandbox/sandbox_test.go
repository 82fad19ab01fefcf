//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) {
	RunIfHelper()
	goleak.VerifyTestMain(m)
}

// fakeABI makes the kernel report abi (err when abi < 0) for one test.
func fakeABI(t *testing.T, abi int, err error) {
	old := abiVersion
	abiVersion = func() (int, error) { return abi, err }
	t.Cleanup(func() { abiVersion = old })
}

func target(t *testing.T, name string) Target {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", "")
	return Target{Name: name, Path: "/bin/cat", Args: []string{"/dev/null"}, Env: os.Environ()}
}

func TestPrepareRefusesWhatTheKernelLacks(t *testing.T) {
	for _, tc := range []struct {
		name string
		abi  int
		err  error
		pol  Policy
		want string
	}{
		{"no landlock", 0, unix.ENOSYS, Policy{}, "the kernel offers no Landlock (built without CONFIG_SECURITY_LANDLOCK)"},
		{"disabled", 0, unix.EOPNOTSUPP, Policy{}, "disabled: add landlock to the lsm= boot parameter"},
		{"no tcp rules", 3, nil, Policy{}, "Landlock ABI 3 has no TCP rules"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fakeABI(t, tc.abi, tc.err)
			_, err := Prepare(tc.pol, target(t, "s"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "bestEffort") {
				t.Fatalf("Prepare = %v, want %q and the bestEffort hint", err, tc.want)
			}
			tc.pol.BestEffort = true
			pl, err := Prepare(tc.pol, target(t, "s"))
			if err != nil {
				t.Fatalf("best effort: %v", err)
			}
			if s := pl.Summary(""); !strings.Contains(s, "best effort, not applied: ") || !strings.Contains(s, tc.want) {
				t.Errorf("summary %q does not say what is not applied", s)
			}
		})
	}
	t.Run("network all needs no tcp rules", func(t *testing.T) {
		fakeABI(t, 3, nil)
		if _, err := Prepare(Policy{Network: Network{All: true}}, target(t, "s")); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPreparePaths(t *testing.T) {
	tg := target(t, "paths")
	extra := t.TempDir()
	pl, err := Prepare(Policy{Read: []string{extra, "/no/such/dir"}, Write: []string{"/dev/shm"}}, tg)
	if err != nil {
		t.Fatal(err)
	}
	state, _ := StateDir("paths")
	if pl.StateDir != state || pl.TempDir != filepath.Join(state, "tmp") {
		t.Errorf("state %q temp %q", pl.StateDir, pl.TempDir)
	}
	if fi, err := os.Stat(pl.TempDir); err != nil || !fi.IsDir() {
		t.Errorf("temp dir not created: %v", err)
	}
	has := func(list []string, p string) bool {
		for _, x := range list {
			if x == p {
				return true
			}
		}
		return false
	}
	if !has(pl.ReadDirs, extra) || !has(pl.ReadDirs, "/usr") || !has(pl.WriteDirs, state) || !has(pl.WriteFiles, "/dev/null") {
		t.Errorf("plan misses paths: read %v write %v files %v", pl.ReadDirs, pl.WriteDirs, pl.WriteFiles)
	}
	if has(pl.ReadDirs, os.Getenv("HOME")) || has(pl.ReadDirs, "/etc") || has(pl.ReadDirs, "/") {
		t.Errorf("plan grants HOME, /etc or /: %v", pl.ReadDirs)
	}
	if len(pl.Missing) != 1 || pl.Missing[0] != "/no/such/dir" {
		t.Errorf("Missing = %v", pl.Missing)
	}
}

// runPlan runs the helper (this test binary) on a plan for argv.
func runPlan(t *testing.T, pol Policy, argv ...string) (string, error) {
	t.Helper()
	tg := target(t, "run")
	tg.Path, tg.Args = argv[0], argv[1:]
	pl, err := Prepare(pol, tg)
	if err != nil {
		t.Fatal(err)
	}
	helper, env, err := pl.Wrap()
	if err != nil {
		t.Fatal(err)
	}
	self, _ := os.Readlink(helper)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestHelperConfines(t *testing.T) {
	if ABI() < 1 {
		t.Skip("no Landlock in this kernel")
	}
	secret := filepath.Join(t.TempDir(), "id_rsa")
	if err := os.WriteFile(secret, []byte("KEY"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := runPlan(t, Policy{}, "/bin/cat", secret); err == nil || !strings.Contains(out, "Permission denied") {
		t.Errorf("cat of a secret under strict: %v %q, want Permission denied", err, out)
	}
	if out, err := runPlan(t, Policy{Read: []string{filepath.Dir(secret)}}, "/bin/cat", secret); err != nil || out != "KEY" {
		t.Errorf("cat of a readable file: %v %q", err, out)
	}
	out, err := runPlan(t, Policy{Limits: Limits{OpenFiles: 37}}, "/bin/sh", "-c", "ulimit -n; grep NoNewPrivs /proc/self/status")
	if err != nil || !strings.Contains(out, "37\n") || !strings.Contains(out, "NoNewPrivs:\t1") {
		t.Errorf("rlimit and no_new_privs: %v %q", err, out)
	}
	if out, err := runPlan(t, Policy{}, "/no/such/program"); err == nil || !strings.Contains(out, "mcpd sandbox: exec /no/such/program") {
		t.Errorf("exec failure: %v %q", err, out)
	}
}
