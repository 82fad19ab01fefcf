//go:build linux

package procs

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// record is what the record file of one child says: enough for the next
// mcpd to kill what is left of it, and nothing else.
type record struct {
	Server string `json:"server"`
	Pid    int    `json:"pid"`
	Start  uint64 `json:"start"` // /proc/PID/stat field 22
	Pgid   int    `json:"pgid"`
	Sid    int    `json:"sid"`
	Cgroup string `json:"cgroup,omitempty"`
	// Known are the descendants found by the last /proc scan (without a
	// cgroup only).
	Known []member `json:"known,omitempty"`
}

// member is one process, named by pid and start time.
type member struct {
	Pid   int    `json:"pid"`
	Start uint64 `json:"start"`
}

// Group is every process of one child: its cgroup, or its process group and
// the descendants found in /proc. A nil *Group does nothing.
type Group struct {
	k    *Keeper
	path string // record file; "" for none
	// rec.Known and closed are guarded by k.mu; the rest is set at start.
	rec    record
	closed bool
	// limits are the cgroup's (set at start).
	limits Limits
}

// update replaces the known descendants with those alive in t: the
// descendants of the child and of the known ones (which may have been
// reparented to mcpd), and the other members of its process group. It
// reports whether the set changed. k.mu must be held.
func (g *Group) update(t table) bool {
	roots := []int{g.rec.Pid}
	for _, m := range g.rec.Known {
		if st, ok := t.procs[m.Pid]; ok && st.start == m.Start && !st.gone() {
			roots = append(roots, m.Pid)
		}
	}
	set := map[member]bool{}
	for _, pid := range roots[1:] {
		set[member{pid, t.procs[pid].start}] = true
	}
	for _, st := range t.descendants(roots...) {
		set[member{st.pid, st.start}] = true
	}
	for _, st := range t.procs {
		if st.pgid == g.rec.Pgid && st.sid == g.rec.Sid && st.pid != g.rec.Pid && !st.gone() {
			set[member{st.pid, st.start}] = true
		}
	}
	known := make([]member, 0, len(set))
	for m := range set {
		known = append(known, m)
	}
	slices.SortFunc(known, func(a, b member) int { return a.Pid - b.Pid })
	if slices.Equal(known, g.rec.Known) {
		return false
	}
	g.rec.Known = known
	return true
}

// setKnown makes the known set the live roots and their descendants in t,
// and reports whether it changed. k.mu must be held.
func (g *Group) setKnown(t table, roots []int) bool {
	var known []member
	for _, pid := range roots {
		known = append(known, member{pid, t.procs[pid].start})
	}
	for _, st := range t.descendants(roots...) {
		known = append(known, member{st.pid, st.start})
	}
	slices.SortFunc(known, func(a, b member) int { return a.Pid - b.Pid })
	if slices.Equal(known, g.rec.Known) {
		return false
	}
	g.rec.Known = known
	return true
}

// write saves the record (atomically: a new file renamed over the old).
// k.mu must be held.
func (g *Group) write() {
	if g.path == "" || g.closed {
		return
	}
	if g.rec.Pid == 0 && len(g.rec.Known) == 0 { // the orphans, none left
		if err := os.Remove(g.path); err != nil && !os.IsNotExist(err) {
			g.k.log.Warn("remove process record", zap.String("path", g.path), zap.Error(err))
		}
		return
	}
	data, err := json.Marshal(g.rec)
	if err == nil {
		tmp := g.path + ".tmp"
		if err = os.WriteFile(tmp, data, 0o600); err == nil {
			err = os.Rename(tmp, g.path)
		}
	}
	if err != nil {
		g.k.log.Warn("write process record", zap.String("path", g.path), zap.Error(err))
	}
}

// Kill SIGKILLs every process of the group but the child itself, which
// internal/transport kills with its process group: the whole cgroup, or
// else every known descendant (rescanned now). Call it once the child has
// exited, before it is reaped.
func (g *Group) Kill() {
	if g == nil {
		return
	}
	if g.rec.Cgroup != "" {
		if err := killCgroup(g.rec.Cgroup); err != nil {
			g.k.log.Warn("kill cgroup", zap.String("server", g.rec.Server), zap.String("cgroup", g.rec.Cgroup), zap.Error(err))
		}
		return
	}
	t := scanProc()
	g.k.mu.Lock()
	g.update(t)
	known := slices.Clone(g.rec.Known)
	g.k.mu.Unlock()
	for _, m := range known {
		killExact(m.Pid, m.Start)
	}
}

// Close forgets the group once its child has been reaped: it removes the
// cgroup (waiting up to limit for its killed processes to exit) and the
// record.
func (g *Group) Close(limit time.Duration) {
	if g == nil {
		return
	}
	if g.rec.Cgroup != "" {
		if err := removeCgroup(g.rec.Cgroup, limit); err != nil {
			g.k.log.Debug("remove cgroup", zap.String("cgroup", g.rec.Cgroup), zap.Error(err))
		}
	}
	g.k.mu.Lock()
	g.closed = true
	delete(g.k.groups, g.rec.Pid)
	g.k.mu.Unlock()
	if g.path != "" {
		if err := os.Remove(g.path); err != nil && !os.IsNotExist(err) {
			g.k.log.Warn("remove process record", zap.String("path", g.path), zap.Error(err))
		}
	}
}

// KillLeftovers kills what the records in the record directory describe:
// the processes of children of an mcpd that died without stopping them
// (SIGKILL). Call it before starting any child, once the socket is ours (so
// no other mcpd uses the records). A process is killed only if its pid and
// start time match, so a recycled pid is never hit. It returns how many
// processes it killed.
func (k *Keeper) KillLeftovers() int {
	if k == nil || k.dir == "" {
		return 0
	}
	if err := k.lockRecords(); err != nil {
		k.log.Warn("process records not kept", zap.String("dir", k.dir), zap.Error(err))
		k.mu.Lock()
		k.dir, k.orphans.path = "", ""
		k.mu.Unlock()
		return 0
	}
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		k.log.Warn("read process records", zap.String("dir", k.dir), zap.Error(err))
		return 0
	}
	n := 0
	for _, e := range entries {
		path := filepath.Join(k.dir, e.Name())
		if e.Name() == lockName {
			continue
		}
		if strings.HasSuffix(e.Name(), ".json") {
			n += k.killRecord(path)
		}
		_ = os.Remove(path)
	}
	if n > 0 {
		k.log.Info("killed processes left by a previous mcpd", zap.Int("processes", n))
	}
	return n
}

// lockName is the lock file of a record directory.
const lockName = ".lock"

// lockRecords takes the record directory's lock for the rest of mcpd's
// life, so that no two mcpds ever read or kill from one set of records
// (even two that both believe they own one socket).
func (k *Keeper) lockRecords() error {
	if k.lock != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(k.dir, lockName), os.O_RDWR|os.O_CREATE|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("open lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return errors.New("another mcpd holds their lock")
		}
		return fmt.Errorf("lock: %w", err)
	}
	k.lock = f
	return nil
}

// killRecord kills what one record describes.
func (k *Keeper) killRecord(path string) int {
	data, err := os.ReadFile(path)
	var rec record
	if err == nil {
		err = json.Unmarshal(data, &rec)
	}
	if err != nil {
		k.log.Warn("unreadable process record", zap.String("path", path), zap.Error(err))
		return 0
	}
	n := 0
	if rec.Cgroup != "" {
		if b, err := os.ReadFile(filepath.Join(rec.Cgroup, "cgroup.procs")); err == nil {
			n += len(strings.Fields(string(b)))
		}
		if err := killCgroup(rec.Cgroup); err == nil {
			if err := removeCgroup(rec.Cgroup, time.Second); err != nil {
				k.log.Debug("remove cgroup", zap.String("cgroup", rec.Cgroup), zap.Error(err))
			}
		}
	}
	t := scanProc()
	victims := map[member]bool{}
	leader, ok := t.procs[rec.Pid]
	// A pid of 0 is the orphans' record; a record without a real group and
	// session must not match every process that has none (kernel threads).
	reused := rec.Pid <= 1 || rec.Pgid <= 1 || rec.Sid <= 0 || (ok && leader.start != rec.Start)
	// Members are matched by group only when the child led its own session
	// (as transport starts it): then no job of the user's shell can share
	// both ids, even once the child's pid is recycled.
	ownSession := rec.Sid == rec.Pid && rec.Pgid == rec.Pid
	if ok && !reused {
		victims[member{rec.Pid, rec.Start}] = true
	}
	for _, m := range rec.Known {
		victims[m] = true
	}
	// The process group's id is held by its members as long as one lives,
	// so unless the leader's pid now names another process, its members
	// (in the session, started after the child) are the child's.
	for _, st := range t.procs {
		if !reused && ownSession && st.pgid == rec.Pgid && st.sid == rec.Sid && st.start >= rec.Start {
			victims[member{st.pid, st.start}] = true
		}
	}
	var pids []int
	for m := range victims {
		if st, ok := t.procs[m.Pid]; ok && st.start == m.Start {
			pids = append(pids, m.Pid)
		}
	}
	for _, st := range t.descendants(pids...) {
		victims[member{st.pid, st.start}] = true
	}
	for m := range victims {
		if killExact(m.Pid, m.Start) {
			n++
		}
	}
	return n
}
