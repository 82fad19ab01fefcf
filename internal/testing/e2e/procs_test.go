package e2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// grandchildServers are two fake servers started through sh: "ingroup"
// leaves two sleeps in its process group, "setsid" one in a session of its
// own, out of the group.
func grandchildServers(t *testing.T, dir string) string {
	t.Helper()
	for _, tool := range []string{"sh", "sleep", "setsid"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s: %v", tool, err)
		}
	}
	bin, _ := fakemcp.Command()
	entry := func(script string) map[string]any {
		return map[string]any{
			"command":   "sh",
			"args":      []string{"-c", script + ` & exec "$0" -test.run='^$'`, bin},
			"env":       map[string]string{fakemcp.EnvMode: "dual", "GORACE": "atexit_sleep_ms=0"},
			"autostart": true,
		}
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"ingroup": entry("sleep 1000 & sleep 1000"),
		"setsid":  entry("setsid sleep 1000"),
	}}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// procStat returns the ppid, process group and session of pid.
func procStat(pid int) (ppid, pgid, sid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, 0, false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ = strconv.Atoi(f[1])
	pgid, _ = strconv.Atoi(f[2])
	sid, _ = strconv.Atoi(f[3])
	return ppid, pgid, sid, true
}

// childrenOf returns the live children of pid.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if ppid, _, _, ok := procStat(p); ok && ppid == pid && alive(p) {
			out = append(out, p)
		}
	}
	return out
}

// recorded reports whether a process record next to socket covers pid: by
// its cgroup, its process group, or as a known descendant.
func recorded(socket string, pid int) bool {
	dir := paths.RecordDir(socket)
	entries, _ := os.ReadDir(dir)
	_, pgid, _, _ := procStat(pid)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		var rec struct {
			Pgid   int
			Cgroup string
			Known  []struct{ Pid int }
		}
		if json.Unmarshal(data, &rec) != nil {
			continue
		}
		if rec.Pgid == pgid && pgid != 0 {
			return true
		}
		if rec.Cgroup != "" {
			procs, _ := os.ReadFile(filepath.Join(rec.Cgroup, "cgroup.procs"))
			if slices.Contains(strings.Fields(string(procs)), strconv.Itoa(pid)) {
				return true
			}
		}
		for _, k := range rec.Known {
			if k.Pid == pid {
				return true
			}
		}
	}
	return false
}

// No process of a server outlives mcpd: not the sleeps sh leaves in the
// process group, not the one that setsid took out of it, whether mcpd is
// stopped with SIGTERM or SIGKILLed (then the next mcpd on the same socket
// kills them from its predecessor's records). Per-server cgroups are used
// where they can be made; "off" tests the process-group and /proc tracking.
func TestGrandchildrenDieWithMcpd(t *testing.T) {
	skipShort(t)
	for _, cgroups := range []string{"auto", "off"} {
		for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL} {
			t.Run("cgroups="+cgroups+"/"+sig.String(), func(t *testing.T) {
				testGrandchildrenDie(t, cgroups, sig)
			})
		}
	}
}

func testGrandchildrenDie(t *testing.T, cgroups string, sig syscall.Signal) {
	dir := tempdir.Short(t)
	socket := filepath.Join(dir, "run", "mcpd.sock")
	env := append(daemonEnv(), "MCPD_CGROUPS="+cgroups)
	start := func(config string) *daemon {
		cmd := exec.Command(mcpdBin, "--socket", socket, "--config", config, "--log-level", "debug", "--http-listen", "off",
			"--state-dir", filepath.Join(dir, "state"))
		cmd.Env = env
		d := spawnCmd(t, cmd, socket, config)
		d.waitServing()
		return d
	}
	d := start(grandchildServers(t, dir))
	c := d.client()

	servers := map[string]int{}
	poll(t, "both servers ready", func() (bool, error) {
		for _, s := range d.status(c).GetServers() {
			if s.GetState() != mcpdv1.ServerState_SERVER_STATE_READY {
				return false, nil
			}
			servers[s.GetName()] = int(s.GetPid())
		}
		return len(servers) == 2, nil
	})
	grandchildren := map[string][]int{}
	poll(t, "the sleeps to start", func() (bool, error) {
		for name, pid := range servers {
			grandchildren[name] = childrenOf(pid)
		}
		return len(grandchildren["ingroup"]) == 2 && len(grandchildren["setsid"]) == 1, nil
	})
	var all []int
	for _, pids := range grandchildren {
		all = append(all, pids...)
	}
	t.Cleanup(func() { // whatever happens, nothing is left behind
		for _, pid := range all {
			if alive(pid) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	_, pgid, _, _ := procStat(grandchildren["ingroup"][0])
	if pgid != servers["ingroup"] {
		t.Fatalf("in-group sleep has process group %d, want the server's %d", pgid, servers["ingroup"])
	}
	outside := grandchildren["setsid"][0]
	if _, pgid, sid, _ := procStat(outside); pgid == servers["setsid"] || sid != outside {
		t.Fatalf("setsid sleep has process group %d, session %d: not out of the group", pgid, sid)
	}
	if sig == syscall.SIGKILL {
		waitRecorded(t, socket, all)
	}

	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := d.wait()
	if sig == syscall.SIGTERM && err != nil {
		t.Fatalf("mcpd after SIGTERM: %v, want exit status 0", err)
	}
	if sig == syscall.SIGKILL {
		// The next mcpd on the same socket, with no servers of its own.
		empty := filepath.Join(dir, "empty.json")
		if err := os.WriteFile(empty, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		start(empty)
	}
	for name, pids := range grandchildren {
		for _, pid := range append(pids, servers[name]) {
			poll(t, "pid "+strconv.Itoa(pid)+" of "+name+" to die", func() (bool, error) { return !alive(pid), nil })
		}
	}
	if sig == syscall.SIGTERM {
		entries, _ := os.ReadDir(paths.RecordDir(socket))
		for _, e := range entries {
			if e.Name() != ".lock" { // the directory's lock stays
				t.Errorf("process record %s left after a clean stop", e.Name())
			}
		}
	}
}

// waitRecorded waits until mcpd's process records cover every pid (without
// cgroups a process that left the group is found by the next /proc scan).
func waitRecorded(t *testing.T, socket string, pids []int) {
	t.Helper()
	poll(t, "mcpd to record every process of its servers", func() (bool, error) {
		for _, pid := range pids {
			if !recorded(socket, pid) {
				return false, nil
			}
		}
		return true, nil
	})
}

// removeRecordedCgroups kills and removes the cgroups that mcpd's records
// next to socket still name (a SIGKILLed mcpd whose socket no later mcpd
// used leaves them), so that no test leaves a cgroup behind.
func removeRecordedCgroups(socket string) {
	dir := paths.RecordDir(socket)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		var rec struct{ Cgroup string }
		if err != nil || json.Unmarshal(data, &rec) != nil || rec.Cgroup == "" {
			continue
		}
		_ = os.WriteFile(filepath.Join(rec.Cgroup, "cgroup.kill"), []byte("1"), 0)
		deadline := time.Now().Add(waitTimeout)
		for {
			err := os.Remove(rec.Cgroup)
			if err == nil || errors.Is(err, os.ErrNotExist) || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond) // killed processes exit within moments
		}
	}
}
