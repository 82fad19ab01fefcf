package core

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/procs"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

func TestSummarizeSharing(t *testing.T) {
	const mib = 1 << 20
	servers := []supervisor.Status{
		{Name: "fs", Pid: 10},
		{Name: "git", Pid: 20},
		{Name: "idle", Pid: 30}, // autostarted, used by no app
		{Name: "down"},          // used once, not running now
		{Name: "web", URL: "https://example.com/mcp"},
		{Name: "ws", Share: "client", Instances: []supervisor.Status{ // one instance per app
			{Name: "ws", Instance: "a", Pid: 40}, {Name: "ws", Instance: "b", Pid: 41},
		}},
	}
	mem := map[int]procs.Memory{
		10: {Procs: 1, RSS: 60 * mib, PSS: 40 * mib, PSSKnown: true},
		20: {Procs: 3, RSS: 90 * mib, PSS: 70 * mib, PSSKnown: true}, // a child with two descendants
		30: {Procs: 1, RSS: 10 * mib, PSS: 8 * mib, PSSKnown: true},
		40: {Procs: 1, RSS: 30 * mib, PSS: 20 * mib, PSSKnown: true},
		41: {Procs: 1, RSS: 50 * mib, PSS: 40 * mib, PSSKnown: true},
	}
	tests := []struct {
		name string
		apps []ConnectedApp
		mem  map[int]procs.Memory
		want sharing
	}{
		{
			name: "no apps",
			mem:  mem,
			want: sharing{processes: 5, mem: procs.Memory{Procs: 7, RSS: 240 * mib, PSS: 178 * mib, PSSKnown: true}},
		},
		{
			name: "three apps share two servers",
			apps: []ConnectedApp{
				{Transport: TransportGRPC, Used: []string{"fs", "git"}},
				{Transport: TransportRelay, Used: []string{"fs", "git"}, Host: true},
				{Transport: TransportHTTP, Used: []string{"fs", "git", "web"}, Host: true},
				{Transport: TransportGRPC}, // mcpdctl status: used nothing
			},
			mem: mem,
			want: sharing{apps: 3, hosts: 2, processes: 5, remote: 1,
				mem:              procs.Memory{Procs: 7, RSS: 240 * mib, PSS: 178 * mib, PSSKnown: true},
				withoutProcesses: 6, withoutRSS: 3 * 150 * mib, withoutPSS: 3 * 110 * mib},
		},
		{
			name: "instances, a stopped server and one removed",
			apps: []ConnectedApp{
				{Used: []string{"ws", "down", "gone"}},
				{Used: []string{"ws"}},
			},
			mem: mem,
			// ws: (30+50)/2 MiB per instance, two apps; down: a process, no memory.
			want: sharing{apps: 2, processes: 5,
				mem:              procs.Memory{Procs: 7, RSS: 240 * mib, PSS: 178 * mib, PSSKnown: true},
				withoutProcesses: 3, withoutRSS: 2 * 40 * mib, withoutPSS: 2 * 30 * mib},
		},
		{
			name: "PSS unreadable for one process",
			apps: []ConnectedApp{{Used: []string{"fs"}}},
			mem: map[int]procs.Memory{
				10: {Procs: 1, RSS: 60 * mib, PSS: 40 * mib, PSSKnown: true},
				20: {Procs: 1, RSS: 90 * mib},
			},
			want: sharing{apps: 1, processes: 5,
				mem:              procs.Memory{Procs: 2, RSS: 150 * mib, PSS: 40 * mib},
				withoutProcesses: 1, withoutRSS: 60 * mib, withoutPSS: 40 * mib},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := summarizeSharing(tt.apps, servers, tt.mem)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(sharing{})); diff != "" {
				t.Errorf("summarizeSharing (-want +got):\n%s", diff)
			}
		})
	}
}

// The meter measures again after memoryMaxAge, or at once for a new child.
func TestMemoryMeter(t *testing.T) {
	now := time.Unix(1000, 0)
	var measured [][]int
	m := &memoryMeter{now: func() time.Time { return now }, measure: func(pids []int) map[int]procs.Memory {
		measured = append(measured, pids)
		out := map[int]procs.Memory{}
		for _, p := range pids {
			out[p] = procs.Memory{Procs: 1, RSS: int64(p)}
		}
		return out
	}}
	m.of([]int{1})
	m.of([]int{1})
	now = now.Add(memoryMaxAge / 2)
	m.of([]int{1, 2}) // a new child
	m.of([]int{2})
	now = now.Add(memoryMaxAge)
	if got := m.of([]int{2})[2]; got.RSS != 2 {
		t.Errorf("of(2) = %+v", got)
	}
	if want := [][]int{{1}, {1, 2}, {2}}; fmt.Sprint(measured) != fmt.Sprint(want) {
		t.Errorf("measured %v, want %v", measured, want)
	}
}

// An app's calls note the servers it used, not names that are no server.
func TestNoteUse(t *testing.T) {
	c := &appConn{id: 1, transport: TransportGRPC, open: func() bool { return true }}
	ctx := context.WithValue(context.Background(), appKey{}, c)
	noteUse(ctx, "b", nil)
	noteUse(ctx, "a", errors.New("the child failed"))
	noteUse(ctx, "b", nil)
	noteUse(ctx, "made-up", fmt.Errorf("call: %w", supervisor.ErrUnknownServer))
	noteUse(ctx, "", nil)
	noteUse(context.Background(), "c", nil) // no app: nothing to note
	tr := newAppTracker()
	tr.add(c)
	if diff := cmp.Diff([]string{"a", "b"}, tr.snapshot()[0].Used); diff != "" {
		t.Errorf("used (-want +got):\n%s", diff)
	}
}
