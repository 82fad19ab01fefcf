//go:build linux

package procs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// cpuPeriod is the cpu.max period, in microseconds (the kernel's default).
const cpuPeriod = 100000

// leafName is the cgroup mcpd moves itself into, under its own, when the
// controllers of limits must be enabled for its children's cgroups (cgroup
// v2 allows no process in a cgroup that hands controllers down).
const leafName = "mcpd-daemon"

// CheckLimits reports whether children can be given l: mcpd has a cgroup
// v2 of its own whose controllers it can hand down to each child's
// cgroup. It enables those controllers the first time they are needed.
// The error wraps ErrLimits and says what is missing.
func (k *Keeper) CheckLimits(l Limits) error {
	if l.IsZero() {
		return nil
	}
	if k == nil {
		return fmt.Errorf("%w: mcpd keeps no cgroups here", ErrLimits)
	}
	k.mu.Lock()
	base, off := k.cgBase, k.cgOff
	k.mu.Unlock()
	if base == "" {
		return fmt.Errorf("%w: %s", ErrLimits, off)
	}
	k.ctlMu.Lock()
	defer k.ctlMu.Unlock()
	if err := enableControllers(base, l.controllers(), k.log); err != nil {
		return fmt.Errorf("%w: %w", ErrLimits, err)
	}
	return nil
}

// enableControllers makes sure base hands the controllers need down to
// its sub-cgroups, moving mcpd into a leaf of base when base holds mcpd
// itself.
func enableControllers(base string, need []string, log *zap.Logger) error {
	enabled, err := readFields(filepath.Join(base, "cgroup.subtree_control"))
	if err != nil {
		return err
	}
	var missing []string
	for _, c := range need {
		if !slices.Contains(enabled, c) {
			missing = append(missing, c)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	avail, err := readFields(filepath.Join(base, "cgroup.controllers"))
	if err != nil {
		return err
	}
	for _, c := range missing {
		if !slices.Contains(avail, c) {
			return noController(base, c)
		}
	}
	ctl := "+" + strings.Join(missing, " +")
	err = os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte(ctl), 0)
	if errors.Is(err, unix.EBUSY) {
		if err = moveToLeaf(base); err == nil {
			log.Info("mcpd moved into a leaf cgroup to hand controllers to its servers' cgroups",
				zap.String("cgroup", filepath.Join(base, leafName)))
			err = os.WriteFile(filepath.Join(base, "cgroup.subtree_control"), []byte(ctl), 0)
		}
	}
	if err != nil {
		return fmt.Errorf("enable the %s controllers in %s: %w", strings.Join(missing, ", "), base, err)
	}
	return nil
}

// noController says that base cannot give controller c, and why when that
// can be told: it is bound to cgroup v1 here.
func noController(base, c string) error {
	msg := fmt.Sprintf("cgroup v2 %s offers no %s controller", base, c)
	if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			// v1 lines are "ID:controller[,controller]:path".
			if f := strings.SplitN(line, ":", 3); len(f) == 3 && f[0] != "0" && slices.Contains(strings.Split(f[1], ","), c) {
				return fmt.Errorf("%s: it is held by cgroup v1 here, and limits need cgroup v2 (boot with systemd.unified_cgroup_hierarchy=1)", msg)
			}
		}
	}
	return fmt.Errorf("%s: it is not delegated to mcpd (run mcpd under systemd with Delegate=yes)", msg)
}

// moveToLeaf moves mcpd from base into base/leafName, so that base holds
// no process and may enable controllers. It refuses when base holds
// processes other than mcpd's (a cgroup not delegated to mcpd alone).
func moveToLeaf(base string) error {
	pids, err := readFields(filepath.Join(base, "cgroup.procs"))
	if err != nil {
		return err
	}
	self := strconv.Itoa(os.Getpid())
	for _, p := range pids {
		if p != self {
			return fmt.Errorf("cgroup %s holds processes other than mcpd's, so it cannot hand controllers down (run mcpd under systemd with Delegate=yes)", base)
		}
	}
	leaf := filepath.Join(base, leafName)
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create leaf cgroup: %w", err)
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(self), 0); err != nil {
		return fmt.Errorf("move mcpd into %s: %w", leaf, err)
	}
	return nil
}

// readFields returns the whitespace-separated fields of a cgroup file.
func readFields(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// writeLimits writes l into the cgroup dir of a child not yet started.
func writeLimits(dir string, l Limits) error {
	var files [][2]string
	if l.Memory > 0 {
		files = append(files, [2]string{"memory.max", strconv.FormatInt(l.Memory, 10)},
			[2]string{"memory.swap.max", "0"}, [2]string{"memory.oom.group", "1"})
	}
	if l.Pids > 0 {
		files = append(files, [2]string{"pids.max", strconv.Itoa(l.Pids)})
	}
	if l.CPU > 0 {
		quota := max(int64(l.CPU*cpuPeriod), 1000)
		files = append(files, [2]string{"cpu.max", fmt.Sprintf("%d %d", quota, cpuPeriod)})
	}
	for _, f := range files {
		err := os.WriteFile(filepath.Join(dir, f[0]), []byte(f[1]), 0)
		if err != nil && f[0] == "memory.swap.max" && errors.Is(err, os.ErrNotExist) {
			continue // a kernel without swap accounting: nothing to turn off
		}
		if err != nil {
			return fmt.Errorf("set %s to %s: %w", f[0], f[1], err)
		}
	}
	return nil
}

// StartLimited is Start for a child with cgroup limits: it is started in a
// cgroup of its own with l written in, or not at all (the error wraps
// ErrLimits when the cgroup is what failed). Zero limits: Start.
func (k *Keeper) StartLimited(name string, l Limits, newCmd func() *exec.Cmd) (*exec.Cmd, *Group, error) {
	if l.IsZero() {
		return k.Start(name, newCmd)
	}
	if err := k.CheckLimits(l); err != nil {
		return nil, nil, err
	}
	k.spawnMu.RLock()
	defer k.spawnMu.RUnlock()
	cg, fd := k.newCgroup()
	if fd < 0 {
		return nil, nil, fmt.Errorf("%w: cannot create the server's cgroup (see the log)", ErrLimits)
	}
	defer unix.Close(fd)
	if err := writeLimits(cg, l); err != nil {
		_ = os.Remove(cg)
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrLimits, cg, err)
	}
	cmd := newCmd()
	cmd.SysProcAttr.UseCgroupFD, cmd.SysProcAttr.CgroupFD = true, fd
	if err := cmd.Start(); err != nil {
		_ = os.Remove(cg)
		return cmd, nil, err
	}
	g := k.track(name, cmd.Process.Pid, cg)
	g.limits = l
	return cmd, g, nil
}

// MemoryKilled reports whether the kernel killed a process of the group
// at its memory limit (memory.events oom_kill). Call it before Close.
func (g *Group) MemoryKilled() bool {
	if g == nil || g.rec.Cgroup == "" || g.limits.Memory == 0 {
		return false
	}
	b, err := os.ReadFile(filepath.Join(g.rec.Cgroup, "memory.events"))
	if err != nil {
		return false
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n > 0
		}
	}
	return false
}
