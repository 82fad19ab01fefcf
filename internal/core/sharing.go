package core

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/mcpd-dev/mcpd/internal/procs"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// sharing is what running one process per server for every app saves:
// the apps that use servers, the processes mcpd runs for them, and what
// the same apps would run without mcpd, each its own process of every
// stdio server it used.
type sharing struct {
	// apps are the connected apps that have used a server; hosts are
	// those of them that are MCP hosts (appConn.isHost).
	apps, hosts int
	// processes are the live children of stdio servers, instances of
	// shared servers included; mem is theirs, descendants included.
	processes int
	mem       procs.Memory
	// remote are the remote servers the apps used: no process here.
	remote int
	// withoutProcesses is the sum over apps of the stdio servers each
	// used; withoutRSS and withoutPSS are, summed over those servers, the
	// memory of one of its processes times the apps that used it (PSS
	// meaningful when mem.PSSKnown). A server with no live process adds
	// its processes but no memory.
	withoutProcesses       int
	withoutRSS, withoutPSS int64
}

// summarizeSharing computes the sharing of the servers among apps; mem
// has the memory of the children by pid (procs.TreeMemory).
func summarizeSharing(apps []ConnectedApp, servers []supervisor.Status, mem map[int]procs.Memory) sharing {
	var sh sharing
	perProcess := map[string]procs.Memory{} // by stdio server: one process's memory
	remote := map[string]bool{}
	for _, st := range servers {
		if st.URL != "" {
			remote[st.Name] = true
			continue
		}
		var sum procs.Memory
		pids := childPids(st)
		for _, pid := range pids {
			sum = sum.Add(mem[pid])
		}
		sh.processes += len(pids)
		sh.mem = sh.mem.Add(sum)
		perProcess[st.Name] = perChild(sum, len(pids))
	}
	usedRemote := map[string]bool{}
	for _, a := range apps {
		if len(a.Used) == 0 || a.Transport == TransportDashboard {
			continue // the dashboard would not run servers of its own without mcpd
		}
		sh.apps++
		if a.Host {
			sh.hosts++
		}
		for _, name := range a.Used {
			if remote[name] {
				usedRemote[name] = true
				continue
			}
			m, ok := perProcess[name]
			if !ok {
				continue // removed from the config since
			}
			sh.withoutProcesses++
			sh.withoutRSS += m.RSS
			sh.withoutPSS += m.PSS
		}
	}
	sh.remote = len(usedRemote)
	return sh
}

// childPids are the pids of a server's live children: its own, or its
// instances' when it is shared.
func childPids(st supervisor.Status) []int {
	var pids []int
	if st.Pid > 0 {
		pids = append(pids, st.Pid)
	}
	for _, in := range st.Instances {
		pids = append(pids, childPids(in)...)
	}
	return pids
}

// perChild is the memory of one of n children whose sum is sum.
func perChild(sum procs.Memory, n int) procs.Memory {
	if n == 0 {
		return procs.Memory{}
	}
	return procs.Memory{Procs: sum.Procs / n, RSS: sum.RSS / int64(n), PSS: sum.PSS / int64(n), PSSKnown: sum.PSSKnown}
}

// memoryMaxAge is how long a measurement of the children's memory is
// reused: it reads /proc for every process on the machine, and status may
// be asked many times a second.
const memoryMaxAge = time.Second

// memoryMeter measures the children's memory (procs.TreeMemory) at most
// once per memoryMaxAge for the same children. Its methods are safe for
// concurrent use.
type memoryMeter struct {
	now     func() time.Time
	measure func(pids []int) map[int]procs.Memory

	mu   sync.Mutex // guards following
	at   time.Time
	last map[int]procs.Memory
}

func newMemoryMeter() *memoryMeter {
	return &memoryMeter{now: time.Now, measure: procs.TreeMemory}
}

// of returns the memory of the children pids.
func (m *memoryMeter) of(pids []int) map[int]procs.Memory {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	if now.Sub(m.at) >= memoryMaxAge || slices.ContainsFunc(pids, func(p int) bool { _, ok := m.last[p]; return !ok }) {
		m.last, m.at = m.measure(pids), now
	}
	return m.last
}

// sharingStatus summarizes the sharing of the servers in servers among
// the connected apps.
func (s *Service) sharingStatus(apps []ConnectedApp, servers []supervisor.Status) sharing {
	var pids []int
	for _, st := range servers {
		if st.URL == "" {
			pids = append(pids, childPids(st)...)
		}
	}
	return summarizeSharing(apps, servers, s.memory.of(pids))
}

// noteUse records that the app a call came from used server, unless the
// call failed for want of such a server: an app cannot grow the set with
// made-up names.
func noteUse(ctx context.Context, server string, err error) {
	if server == "" || errors.Is(err, supervisor.ErrUnknownServer) {
		return
	}
	if c := connFromContext(ctx); c != nil {
		c.use(server)
	}
}
