//go:build linux

package procs

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// ownCgroup returns the directory of mcpd's own cgroup v2, where it may
// create one sub-cgroup per child (delegated to it: Delegate=yes under
// systemd, or simply writable).
func ownCgroup() (string, error) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	rel := ""
	found := false
	for line := range strings.SplitSeq(string(b), "\n") {
		if p, ok := strings.CutPrefix(line, "0::"); ok {
			rel, found = p, true
		}
	}
	if !found {
		return "", errors.New("no cgroup v2 hierarchy in /proc/self/cgroup")
	}
	mnt, err := cgroup2Mount()
	if err != nil {
		return "", err
	}
	return filepath.Join(mnt, rel), nil
}

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted
// (/sys/fs/cgroup, or /sys/fs/cgroup/unified on hybrid systems).
func cgroup2Mount() (string, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// "id parent major:minor root mountpoint options ... - fstype source ..."
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok || !strings.HasPrefix(post, "cgroup2 ") {
			continue
		}
		if fields := strings.Fields(pre); len(fields) >= 5 && fields[3] == "/" {
			return fields[4], nil
		}
	}
	return "", errors.New("cgroup v2 is not mounted")
}

// makeCgroup creates the cgroup dir and opens it for CLONE_INTO_CGROUP. It
// fails if the kernel has no cgroup.kill (before Linux 5.14), without which
// the cgroup would be of no use.
func makeCgroup(dir string) (fd int, err error) {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return -1, err
	}
	if _, err := os.Stat(filepath.Join(dir, "cgroup.kill")); err != nil {
		_ = os.Remove(dir)
		return -1, fmt.Errorf("no cgroup.kill: %w", err)
	}
	fd, err = unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = os.Remove(dir)
		return -1, err
	}
	return fd, nil
}

// killCgroup SIGKILLs every process of the cgroup dir at once. A cgroup that
// no longer exists is not an error.
func killCgroup(dir string) error {
	err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// removeCgroup waits up to limit for the cgroup to have no process left
// (killed processes take a moment to exit), then removes it.
func removeCgroup(dir string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		err := os.Remove(dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond) // cgroup.events could be watched; exits take microseconds
	}
}
