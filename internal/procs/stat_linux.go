//go:build linux

package procs

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
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

// statSize bounds one /proc/PID/stat line: 52 numeric fields of at most
// 20 digits and a command name of at most 64 bytes.
const statSize = 2048

// readStat reads /proc/PID/stat. It uses plain system calls: os.ReadFile
// would also offer each file to the poller (an fstat, four fcntls and an
// epoll_ctl more), for every process of a scan the keeper makes every
// second.
func readStat(pid int) (procStat, error) {
	var pathBuf [32]byte
	path := append(pathBuf[:0], "/proc/"...)
	path = strconv.AppendInt(path, int64(pid), 10)
	path = append(path, "/stat"...)
	fd, err := unix.Open(string(path), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, &os.PathError{Op: "open", Path: string(path), Err: err}
	}
	defer unix.Close(fd)
	var buf [statSize]byte
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return procStat{}, &os.PathError{Op: "read", Path: string(path), Err: err}
		}
		n += m
		if m == 0 || buf[n-1] == '\n' {
			break // the kernel writes the line in one read
		}
	}
	return parseStat(pid, buf[:n])
}

// parseStat parses "pid (comm) state ppid pgrp session ... starttime ...";
// comm may contain spaces and parentheses, so fields count from the last ')'.
func parseStat(pid int, b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("parse /proc/%d/stat: no comm", pid)
	}
	st := procStat{pid: pid}
	rest := b[i+1:]
	// Field 3 (state) is the first after comm; starttime is field 22.
	var err error
	field := 2
	for field < 22 {
		var f []byte
		if f, rest = nextField(rest); f == nil {
			return procStat{}, fmt.Errorf("parse /proc/%d/stat: %d fields", pid, field)
		}
		field++
		switch field {
		case 3:
			if len(f) != 1 {
				return procStat{}, fmt.Errorf("parse /proc/%d/stat: state %q", pid, f)
			}
			st.state = f[0]
		case 4, 5, 6:
			n, e := strconv.Atoi(string(f))
			if e != nil && err == nil {
				err = fmt.Errorf("parse /proc/%d/stat field %d: %w", pid, field, e)
			}
			switch field {
			case 4:
				st.ppid = n
			case 5:
				st.pgid = n
			default:
				st.sid = n
			}
		case 22:
			st.start, _ = strconv.ParseUint(string(f), 10, 64)
		}
	}
	return st, err
}

// nextField returns the first space-separated field of b and what follows
// it, or nil when b has none.
func nextField(b []byte) (field, rest []byte) {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\n') {
		i++
	}
	j := i
	for j < len(b) && b[j] != ' ' && b[j] != '\n' {
		j++
	}
	if i == j {
		return nil, nil
	}
	return b[i:j], b[j:]
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
