// Package policy is the vocabulary of a server's sandbox as the config
// states it (internal/config parses it, internal/sandbox applies it). It
// imports only the standard library, so mcpdctl's config check can use it.
package policy

import (
	"fmt"
	"strings"
)

// PresetStrict is the one preset: read-only system and runtime paths,
// writes only to the server's state dir and temp dir, no network. Every
// sandbox starts from it; a "sandbox" object adds to it.
const PresetStrict = "strict"

// Policy is a server's "sandbox" config, with variables expanded. The zero
// Policy is strict.
type Policy struct {
	// Read are extra absolute paths the server may read (and execute).
	Read []string
	// Write are extra absolute paths the server may read and write.
	Write []string
	// Network is which TCP connections the server may make.
	Network Network
	// Limits bound the server's resources.
	Limits Limits
	// BestEffort starts the server even when part of the sandbox cannot be
	// honoured (no Landlock, no cgroup); what is missing is then reported
	// in status and the log. Without it such a server does not start.
	BestEffort bool
}

// Network is a sandbox's TCP policy.
type Network struct {
	// All leaves the network unrestricted ("network": true).
	All bool
	// Ports are the TCP ports the server may connect to when not All;
	// none means no TCP at all ("network": false).
	Ports []uint16
}

// String says what the policy allows: "all", "none" or "tcp ports 443, 5432".
func (n Network) String() string {
	switch {
	case n.All:
		return "all"
	case len(n.Ports) == 0:
		return "none"
	}
	ps := make([]string, len(n.Ports))
	for i, p := range n.Ports {
		ps[i] = fmt.Sprint(p)
	}
	return "tcp ports " + strings.Join(ps, ", ")
}

// Limits bound a server's resources; a zero field is no limit.
type Limits struct {
	// Memory is the cgroup's memory.max in bytes (swap is off with it).
	Memory int64
	// Pids is the cgroup's pids.max.
	Pids int
	// CPU is the cgroup's cpu.max in CPUs (0.5: half of one).
	CPU float64
	// OpenFiles is RLIMIT_NOFILE, for every process of the server.
	OpenFiles int
}

// NeedsCgroup reports whether a limit needs the server's own cgroup.
func (l Limits) NeedsCgroup() bool { return l.Memory > 0 || l.Pids > 0 || l.CPU > 0 }

// FormatBytes writes n in the largest binary unit that divides it:
// "256 MiB", "1 GiB", "1536 KiB", "100 B".
func FormatBytes(n int64) string {
	for _, u := range []struct {
		size int64
		name string
	}{{1 << 40, "TiB"}, {1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}} {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d B", n)
}
