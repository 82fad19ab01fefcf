//go:build linux

package procs

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseStat(t *testing.T) {
	line := "4242 (a) (b c) S 17 4242 99 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0"
	st, err := parseStat(4242, []byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st != (procStat{pid: 4242, state: 'S', ppid: 17, pgid: 4242, sid: 99, start: 123456}) {
		t.Fatalf("parseStat = %+v", st)
	}
	for _, bad := range []string{
		"4242 no comm",
		"4242 (a) S 17 4242", // too few fields
		"4242 (a) SS 17 4242 99 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0", // state
		"4242 (a) S x 4242 99 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0",   // ppid
	} {
		if st, err := parseStat(4242, []byte(bad)); err == nil {
			t.Errorf("parseStat(%q) = %+v, want an error", bad, st)
		}
	}
	own, err := readStat(os.Getpid())
	if err != nil || own.ppid != os.Getppid() || own.start == 0 || own.gone() {
		t.Fatalf("readStat(self) = %+v, %v", own, err)
	}
	if _, err := readStat(1 << 30); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("readStat(no such pid) = %v, want not exist", err)
	}
}

// A record whose start time does not match the process now holding the pid
// names a recycled pid: KillLeftovers leaves it alone. A matching one is
// killed, and the records are gone afterwards.
func TestKillLeftoversChecksStartTime(t *testing.T) {
	dir := t.TempDir()
	k, err := New(Options{RecordDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Skipf("sleep: %v", err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }() // owned: received below
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-waited
	})
	pid := cmd.Process.Pid
	start, ok := startTime(pid)
	if !ok {
		t.Fatal("no start time")
	}
	writeRec := func(start uint64) {
		data, _ := json.Marshal(record{Server: "s", Pid: pid + 1_000_000, Known: []member{{pid, start}}})
		if err := os.WriteFile(filepath.Join(dir, "x.json"), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeRec(start + 1)
	if n := k.KillLeftovers(); n != 0 {
		t.Fatalf("KillLeftovers with a wrong start time killed %d", n)
	}
	if _, ok := startTime(pid); !ok {
		t.Fatal("process with a recycled pid was killed")
	}
	writeRec(start)
	if n := k.KillLeftovers(); n != 1 {
		t.Fatalf("KillLeftovers killed %d, want 1", n)
	}
	if err := <-waited; err == nil {
		t.Fatal("sleep exited cleanly, want killed")
	}
	waited <- nil // for the cleanup
	if entries, _ := os.ReadDir(dir); len(entries) != 1 || entries[0].Name() != lockName {
		t.Errorf("records left: %v, want only the lock", entries)
	}
}

// Two keepers on one record directory: the second does not read or kill
// from the records the first one keeps.
func TestKillLeftoversLocked(t *testing.T) {
	dir := t.TempDir()
	first, err := New(Options{RecordDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	first.KillLeftovers()
	rec := filepath.Join(dir, "x.json")
	data, _ := json.Marshal(record{Server: "s", Pid: 2_000_000})
	if err := os.WriteFile(rec, data, 0o600); err != nil {
		t.Fatal(err)
	}
	second, err := New(Options{RecordDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	second.KillLeftovers()
	if _, err := os.Stat(rec); err != nil {
		t.Fatalf("the second keeper touched the first one's records: %v", err)
	}
	if second.dir != "" {
		t.Errorf("the second keeper keeps records in %q, want none", second.dir)
	}
	first.lock.Close()
}

// TreeMemory counts a child and its grandchild.
func TestTreeMemory(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & echo forked; wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // sleep is forked
		t.Fatal(err)
	}
	m := TreeMemory([]int{cmd.Process.Pid})[cmd.Process.Pid]
	if m.Procs != 2 || m.RSS <= 0 {
		t.Fatalf("TreeMemory(sh and sleep) = %+v, want 2 processes and some RSS", m)
	}
	if m.PSSKnown && (m.PSS <= 0 || m.PSS > m.RSS) {
		t.Errorf("PSS %d of RSS %d", m.PSS, m.RSS)
	}
	if gone := TreeMemory([]int{1 << 30})[1<<30]; gone != (Memory{}) {
		t.Errorf("TreeMemory(no such pid) = %+v", gone)
	}
}

func TestParsePss(t *testing.T) {
	rollup := []byte("5561347f3000-7fff86f19000 ---p 00000000 00:00 0  [rollup]\nRss:  1636 kB\nPss:  274 kB\nPss_Dirty: 112 kB\n")
	if pss, ok := parsePss(rollup); !ok || pss != 274<<10 {
		t.Errorf("parsePss = %d, %v; want %d", pss, ok, 274<<10)
	}
	if _, ok := parsePss([]byte("Rss: 1 kB\n")); ok {
		t.Error("parsePss without a Pss line reported one")
	}
}

func TestMemoryAdd(t *testing.T) {
	a := Memory{Procs: 1, RSS: 10, PSS: 5, PSSKnown: true}
	b := Memory{Procs: 2, RSS: 20, PSS: 0, PSSKnown: false}
	if got := a.Add(b); got != (Memory{Procs: 3, RSS: 30, PSS: 5, PSSKnown: false}) {
		t.Errorf("a+b = %+v", got)
	}
	if got := (Memory{}).Add(a); got != a {
		t.Errorf("0+a = %+v", got)
	}
}
