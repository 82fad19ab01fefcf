package hosts

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
)

// Running returns the pid of a running copy of h that belongs to this
// user, 0 for none. It reads /proc; where there is none it finds nothing.
func (h *Host) Running() int {
	if len(h.Processes) == 0 {
		return 0
	}
	dirs, _ := os.ReadDir("/proc")
	uid := uint32(os.Getuid())
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		dir := filepath.Join("/proc", d.Name())
		fi, err := os.Stat(dir)
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Uid != uid {
			continue
		}
		if slices.Contains(h.Processes, processName(dir)) {
			return pid
		}
	}
	return 0
}

// processName is a process's name: its title (comm), or the base name of
// its first argument when that is longer than comm's 15 bytes.
func processName(dir string) string {
	comm, _ := os.ReadFile(filepath.Join(dir, "comm"))
	name := string(bytes.TrimSpace(comm))
	if len(name) < 15 {
		return name
	}
	cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
	arg0, _, _ := bytes.Cut(cmdline, []byte{0})
	return filepath.Base(string(arg0))
}
