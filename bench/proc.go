package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// memory is one process tree's resident memory in bytes.
type memory struct {
	RSS int64 `json:"rss_bytes"`
	PSS int64 `json:"pss_bytes"`
}

func (m memory) add(o memory) memory { return memory{RSS: m.RSS + o.RSS, PSS: m.PSS + o.PSS} }

// smapsRollup reads Rss and Pss of pid from /proc/PID/smaps_rollup.
func smapsRollup(pid int) (memory, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return memory{}, fmt.Errorf("read smaps_rollup of %d: %w", pid, err)
	}
	var m memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue
		}
		switch f[0] {
		case "Rss:":
			m.RSS = kb << 10
		case "Pss:":
			m.PSS = kb << 10
		}
	}
	return m, nil
}

// statusField returns a "kB" field of /proc/PID/status (VmRSS, VmHWM) in bytes.
func statusField(pid int, field string) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read status of %d: %w", pid, err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("parse %s of %d: %w", field, pid, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in status of %d", field, pid)
}

// treeMemory sums smaps_rollup over pid and all its descendants (npx-style
// wrappers and their children count too).
func treeMemory(pid int) (memory, error) {
	var total memory
	for _, p := range append([]int{pid}, descendants(pid)...) {
		m, err := smapsRollup(p)
		if err != nil {
			if p == pid {
				return memory{}, err
			}
			continue // a descendant that just exited
		}
		total = total.add(m)
	}
	return total, nil
}

// parentOf returns the parent pid of pid from /proc/PID/stat.
func parentOf(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name is in parentheses and may contain spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("malformed stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, errors.New("malformed stat")
	}
	return strconv.Atoi(f[1])
}

// descendants returns every live process below pid.
func descendants(pid int) []int {
	entries, _ := filepath.Glob("/proc/[0-9]*")
	children := map[int][]int{}
	for _, e := range entries {
		p, err := strconv.Atoi(filepath.Base(e))
		if err != nil {
			continue
		}
		pp, err := parentOf(p)
		if err != nil {
			continue
		}
		children[pp] = append(children[pp], p)
	}
	var out []int
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return false
	}
	return b[i+2] != 'Z' && b[i+2] != 'X'
}

// waitGone polls until none of pids is alive, or the deadline passes; it
// returns the pids still alive then.
func waitGone(pids []int, timeout time.Duration) []int {
	deadline := time.Now().Add(timeout)
	for {
		var left []int
		for _, p := range pids {
			if alive(p) {
				left = append(left, p)
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killPids sends SIGKILL to each pid (by pid only, never by name).
func killPids(pids []int) {
	for _, p := range pids {
		_ = syscall.Kill(p, syscall.SIGKILL)
	}
}
