//go:build linux

package procs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// scanInterval is how often, without cgroups, /proc is scanned for the
// descendants of each child (also after every SIGCHLD).
const scanInterval = time.Second

// Options configure a Keeper.
type Options struct {
	// RecordDir holds one record per running child; "" keeps none.
	RecordDir string
	// Cgroups puts each child in its own cgroup when one can be made.
	Cgroups bool
	// Logger may be nil.
	Logger *zap.Logger
}

// Keeper tracks every process of every child mcpd spawned. Its methods are
// safe for concurrent use.
type Keeper struct {
	log  *zap.Logger
	dir  string
	self int
	// lock is the record directory's lock file, held (flock) for mcpd's
	// life once KillLeftovers took it; nil before, or when another mcpd
	// holds it.
	lock *os.File

	// spawnMu is held shared while a child is forked and registered, and
	// exclusively while the reaper reaps, so the reaper never takes the exit
	// status of a child that os/exec waits for.
	spawnMu sync.RWMutex

	mu     sync.Mutex     // guards groups, cgBase, cgOff, seq and every Group's rec.Known
	groups map[int]*Group // by the child's pid, from its start until Close
	cgBase string         // mcpd's own cgroup; "" when cgroups are off or unusable
	cgOff  string         // why cgBase is "" (for CheckLimits)
	seq    int
	// ctlMu serializes enabling the cgroup controllers of limits.
	ctlMu sync.Mutex
	// orphans records the processes reparented to mcpd (rec.Known only).
	orphans *Group
}

// New makes mcpd a child subreaper (PR_SET_CHILD_SUBREAPER) and returns its
// Keeper. Without a usable cgroup it says so once, at info level, and falls
// back to process groups and /proc tracking.
func New(opts Options) (*Keeper, error) {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("become child subreaper: %w", err)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	k := &Keeper{log: log, dir: opts.RecordDir, self: os.Getpid(), groups: map[int]*Group{}}
	k.orphans = &Group{k: k, rec: record{Server: "(orphans)"}}
	if k.dir != "" {
		k.orphans.path = filepath.Join(k.dir, "orphans.json")
		if err := os.MkdirAll(k.dir, 0o700); err != nil {
			return nil, fmt.Errorf("create process record directory: %w", err)
		}
	}
	if !opts.Cgroups {
		k.cgOff = "per-server cgroups are off (MCPD_CGROUPS=off)"
		log.Info("per-server cgroups are off; a server's processes are tracked by process group and /proc")
		return k, nil
	}
	base, err := ownCgroup()
	if err == nil {
		err = unix.Access(base, unix.W_OK)
	}
	if err != nil {
		k.cgOff = fmt.Sprintf("no writable cgroup v2 of mcpd's own (%v); run mcpd under systemd with Delegate=yes", err)
		log.Info("per-server cgroups unavailable (run under systemd with Delegate=yes for them); a server's processes are tracked by process group and /proc",
			zap.Error(err))
		return k, nil
	}
	k.cgBase = base
	log.Debug("per-server cgroups", zap.String("parent", base))
	return k, nil
}

// Start starts the command newCmd builds (in a cgroup of its own when
// possible) and tracks the child. newCmd must return a fresh, unstarted
// command each time: if starting in a cgroup fails, the command is started
// again without one. With a nil Keeper, Start only starts the command.
func (k *Keeper) Start(name string, newCmd func() *exec.Cmd) (*exec.Cmd, *Group, error) {
	if k == nil {
		cmd := newCmd()
		return cmd, nil, cmd.Start()
	}
	k.spawnMu.RLock()
	defer k.spawnMu.RUnlock()
	cg, fd := k.newCgroup()
	cmd := newCmd()
	if fd >= 0 {
		cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	}
	err := cmd.Start()
	if fd >= 0 {
		_ = unix.Close(fd)
	}
	if err != nil && cg != "" {
		_ = os.Remove(cg)
		cg = ""
		retry := newCmd()
		if rerr := retry.Start(); rerr != nil {
			return retry, nil, rerr // the command's own failure
		}
		k.disableCgroups(fmt.Errorf("start in a cgroup: %w", err))
		cmd, err = retry, nil
	}
	if err != nil {
		return cmd, nil, err
	}
	return cmd, k.track(name, cmd.Process.Pid, cg), nil
}

// newCgroup creates and opens the cgroup of the next child, or returns
// ("", -1) when there is none to be had.
func (k *Keeper) newCgroup() (string, int) {
	k.mu.Lock()
	base := k.cgBase
	k.seq++
	seq := k.seq
	k.mu.Unlock()
	if base == "" {
		return "", -1
	}
	dir := filepath.Join(base, fmt.Sprintf("mcpd-%d-%d", k.self, seq))
	fd, err := makeCgroup(dir)
	if err != nil {
		if !errors.Is(err, os.ErrExist) {
			k.disableCgroups(err)
		}
		return "", -1
	}
	return dir, fd
}

// disableCgroups stops making cgroups after one could not be used.
func (k *Keeper) disableCgroups(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.cgBase != "" {
		k.cgBase = ""
		k.cgOff = fmt.Sprintf("per-server cgroups are unusable: %v", err)
		k.log.Info("per-server cgroups unusable; a server's processes are tracked by process group and /proc", zap.Error(err))
	}
}

// track registers a started child and writes its record.
func (k *Keeper) track(name string, pid int, cgroup string) *Group {
	st, _ := readStat(pid) // a zombie's stat is still there
	g := &Group{k: k, rec: record{Server: name, Pid: pid, Start: st.start, Pgid: st.pgid, Sid: st.sid, Cgroup: cgroup}}
	if k.dir != "" {
		g.path = filepath.Join(k.dir, fmt.Sprintf("%d-%d.json", pid, st.start))
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.groups[pid] = g
	g.write()
	return g
}

// tracked reports whether pid is a child that os/exec will reap.
func (k *Keeper) tracked(pid int) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.groups[pid] != nil
}

// Run reaps orphans reparented to mcpd on every SIGCHLD and, without
// cgroups, rescans each child's descendants, until ctx ends. With a nil
// Keeper it only waits for ctx.
func (k *Keeper) Run(ctx context.Context) {
	if k == nil {
		<-ctx.Done()
		return
	}
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, unix.SIGCHLD)
	defer signal.Stop(sigc)
	tick := time.NewTicker(scanInterval)
	defer tick.Stop()
	k.reap()
	for {
		select {
		case <-ctx.Done():
			return
		case <-sigc:
			k.reap()
		case <-tick.C:
			k.refresh(nil)
		}
	}
}

// reap waits for every exited child of mcpd that os/exec does not wait for
// (descendants of servers reparented to mcpd), then rescans.
func (k *Keeper) reap() {
	k.spawnMu.Lock()
	t := scanProc()
	for _, pid := range t.children[k.self] {
		if !t.procs[pid].gone() || k.tracked(pid) {
			continue
		}
		var ws unix.WaitStatus
		_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
	k.spawnMu.Unlock()
	k.refresh(&t)
}

// refresh updates the known descendants of every child without a cgroup,
// and the orphans (processes reparented to mcpd, with their descendants),
// from t (nil: a fresh scan), and rewrites the records that changed.
func (k *Keeper) refresh(t *table) {
	k.mu.Lock()
	idle := len(k.groups) == 0 && len(k.orphans.rec.Known) == 0
	k.mu.Unlock()
	if idle {
		return
	}
	if t == nil {
		s := scanProc()
		t = &s
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, g := range k.groups {
		if g.rec.Cgroup == "" && g.update(*t) {
			g.write()
		}
	}
	// Orphans cannot be told apart by server any more, but they are all
	// some server's: the next mcpd kills them if this one is killed.
	var orphans []int
	for _, pid := range t.children[k.self] {
		if !t.procs[pid].gone() && k.groups[pid] == nil {
			orphans = append(orphans, pid)
		}
	}
	if k.orphans.setKnown(*t, orphans) {
		k.orphans.write()
	}
}

// KillOrphans kills every process reparented to mcpd that os/exec does not
// wait for, with its descendants, and reaps them; mcpd calls it once every
// server has stopped and Run has returned. It returns how many it killed.
func (k *Keeper) KillOrphans(limit time.Duration) int {
	if k == nil {
		return 0
	}
	t := scanProc()
	var orphans []int
	for _, pid := range t.children[k.self] {
		if !t.procs[pid].gone() && !k.tracked(pid) {
			orphans = append(orphans, pid)
		}
	}
	victims := t.descendants(orphans...)
	for _, pid := range orphans {
		victims = append(victims, t.procs[pid])
	}
	n := 0
	for _, v := range victims {
		if killExact(v.pid, v.start) {
			n++
		}
	}
	deadline := time.Now().Add(limit)
	for _, pid := range orphans {
		for {
			var ws unix.WaitStatus
			got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			if got == pid || err != nil || time.Now().After(deadline) {
				break // reaped (here or by Run), or left to init
			}
			time.Sleep(5 * time.Millisecond) // a SIGKILLed process exits within moments
		}
	}
	k.refresh(nil) // the orphans are gone: so is their record
	if n > 0 {
		k.log.Info("killed processes servers left behind", zap.Int("processes", n))
	}
	return n
}

// killExact SIGKILLs pid if it is still the process that started at start
// (a pidfd pins the process between the check and the signal).
func killExact(pid int, start uint64) bool {
	if pid <= 1 || pid == os.Getpid() {
		return false // init, or ourselves: never
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOSYS) {
			return false
		}
		fd = -1 // before Linux 5.3: check, then kill
	}
	if fd >= 0 {
		defer unix.Close(fd)
	}
	if s, ok := startTime(pid); !ok || s != start {
		return false
	}
	if fd >= 0 {
		return unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0) == nil
	}
	return unix.Kill(pid, unix.SIGKILL) == nil
}
