package procs

import "errors"

// Limits are the cgroup v2 limits of one child; a zero field is no limit.
type Limits struct {
	// Memory is memory.max in bytes (with memory.swap.max 0, so that the
	// limit kills rather than swaps, and memory.oom.group 1, so that the
	// whole server goes at once).
	Memory int64
	// Pids is pids.max.
	Pids int
	// CPU is cpu.max in CPUs: 0.5 is 50ms of every 100ms.
	CPU float64
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// ErrLimits is wrapped by every failure to give a child its cgroup limits:
// no cgroup of mcpd's own, no controller, a limit the kernel refused.
var ErrLimits = errors.New("cgroup limits")

// controllers names the cgroup v2 controllers l needs.
func (l Limits) controllers() []string {
	var out []string
	if l.Memory > 0 {
		out = append(out, "memory")
	}
	if l.Pids > 0 {
		out = append(out, "pids")
	}
	if l.CPU > 0 {
		out = append(out, "cpu")
	}
	return out
}
