//go:build linux

package procs

import (
	"bytes"
	"os"
	"strconv"
)

// TreeMemory measures the processes of each child in pids, scanning /proc
// once: the child, its descendants, and the other members of its process
// group when it leads one (a grandchild reparented to mcpd stays in it). A
// child that has exited measures as zero.
func TreeMemory(pids []int) map[int]Memory {
	out := make(map[int]Memory, len(pids))
	if len(pids) == 0 {
		return out
	}
	t := scanProc()
	for _, pid := range pids {
		out[pid] = t.treeMemory(pid)
	}
	return out
}

// treeMemory measures the processes of the child pid (TreeMemory).
func (t table) treeMemory(pid int) Memory {
	root, ok := t.procs[pid]
	if !ok || root.gone() {
		return Memory{}
	}
	members := map[int]bool{pid: true}
	for _, st := range t.descendants(pid) {
		members[st.pid] = true
	}
	if root.pgid == pid {
		for _, st := range t.procs {
			if st.pgid == pid && st.sid == root.sid && !st.gone() {
				members[st.pid] = true
			}
		}
	}
	var m Memory
	for p := range members {
		m = m.Add(processMemory(p))
	}
	return m
}

// processMemory measures one process: its RSS from /proc/PID/statm and its
// PSS from /proc/PID/smaps_rollup (Linux 4.14+; unreadable for a process
// of another user). A process that is gone measures as zero.
func processMemory(pid int) Memory {
	dir := "/proc/" + strconv.Itoa(pid) + "/"
	statm, err := os.ReadFile(dir + "statm")
	if err != nil {
		return Memory{}
	}
	// statm is "size resident shared text lib data dt", in pages.
	f := bytes.Fields(statm)
	if len(f) < 2 {
		return Memory{}
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return Memory{}
	}
	m := Memory{Procs: 1, RSS: pages * int64(os.Getpagesize())}
	if rollup, err := os.ReadFile(dir + "smaps_rollup"); err == nil {
		m.PSS, m.PSSKnown = parsePss(rollup)
	}
	return m
}

// parsePss returns the "Pss:" line of smaps_rollup in bytes.
func parsePss(rollup []byte) (int64, bool) {
	for line := range bytes.Lines(rollup) {
		rest, ok := bytes.CutPrefix(line, []byte("Pss:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest) // "274 kB"
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		return kb << 10, err == nil
	}
	return 0, false
}
