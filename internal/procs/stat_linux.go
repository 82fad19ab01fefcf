//go:build linux

package procs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procStat is what mcpd needs of /proc/PID/stat.
type procStat struct {
	pid   int
	state byte // R, S, D, Z, X, ...
	ppid  int
	pgid  int
	sid   int
	// start is field 22, the start time in clock ticks after boot: with
	// the pid, it names one process, never a later one that reused the pid.
	start uint64
}

// gone reports whether the process has exited (a zombie counts as gone).
func (s procStat) gone() bool { return s.state == 'Z' || s.state == 'X' }

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(pid, b)
}

// parseStat parses "pid (comm) state ppid pgrp session ... starttime ...";
// comm may contain spaces and parentheses, so fields count from the last ')'.
func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: no comm", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, len(f)+2)
	}
	st := procStat{pid: pid, state: f[0][0]}
	var err error
	num := func(field int) int {
		n, e := strconv.Atoi(string(f[field-3]))
		if e != nil && err == nil {
			err = fmt.Errorf("parse /proc/%d/stat field %d: %w", pid, field, e)
		}
		return n
	}
	st.ppid, st.pgid, st.sid = num(4), num(5), num(6)
	st.start, _ = strconv.ParseUint(string(f[22-3]), 10, 64)
	return st, err
}

// startTime returns the start time of pid, or ok false if it does not exist
// or has exited.
func startTime(pid int) (uint64, bool) {
	st, err := readStat(pid)
	if err != nil || st.gone() {
		return 0, false
	}
	return st.start, true
}

// table is one scan of /proc: every process, and the children of each.
type table struct {
	procs    map[int]procStat
	children map[int][]int
}

// scanProc reads the stat of every process.
func scanProc() table {
	t := table{procs: map[int]procStat{}, children: map[int][]int{}}
	d, err := os.Open("/proc")
	if err != nil {
		return t
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue // exited meanwhile
		}
		t.procs[pid] = st
		t.children[st.ppid] = append(t.children[st.ppid], pid)
	}
	return t
}

// descendants returns the live descendants of roots (not the roots).
func (t table) descendants(roots ...int) []procStat {
	var out []procStat
	seen := map[int]bool{}
	queue := append([]int(nil), roots...)
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range t.children[p] {
			if seen[c] {
				continue
			}
			seen[c] = true
			queue = append(queue, c)
			if st := t.procs[c]; !st.gone() {
				out = append(out, st)
			}
		}
	}
	return out
}
