package main

import (
	"context"
	"fmt"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// cpuRow is the CPU time per call of the processes on one path: the
// front's own process (the bridge, the HTTP floor, which plays no part of
// mcpd) and mcpd, from utime+stime in /proc/PID/stat over sequential
// calls.
type cpuRow struct {
	Server string  `json:"server"`
	Path   string  `json:"path"`
	Op     string  `json:"op"`
	Calls  int     `json:"calls"`
	Front  float64 `json:"front_process_cpu_us_per_call"` // 0: the path has none
	Mcpd   float64 `json:"mcpd_cpu_us_per_call"`
}

// The operations of the CPU section.
const (
	opEcho = "tools/call echo"
	opList = "tools/list (cached)"
)

// cpuCalls is how many calls a CPU figure is made of: enough that the
// 10 ms resolution of /proc/PID/stat, where the process's CPU clock cannot
// be read, is a few µs per call. (The CPU section splits them over its
// interleaved rounds, where the processes measured are the bench's own
// children, whose CPU clocks it reads.)
func (b *bench) cpuCalls() int {
	if b.o.smoke {
		return 500
	}
	return max(b.o.iters, 2000)
}

// cpuPerCall runs calls sequential f and returns the CPU per call of pid
// (0: none) and of mcpd.
func cpuPerCall(calls, pid, mcpdPid int, f func() error) (front, mcpd time.Duration, err error) {
	read := func() (time.Duration, time.Duration, error) {
		var fc time.Duration
		if pid > 0 {
			if fc, err = procCPU(pid); err != nil {
				return 0, 0, err
			}
		}
		mc, err := procCPU(mcpdPid)
		return fc, mc, err
	}
	f0, m0, err := read()
	if err != nil {
		return 0, 0, err
	}
	for range calls {
		if err := f(); err != nil {
			return 0, 0, err
		}
	}
	f1, m1, err := read()
	if err != nil {
		return 0, 0, err
	}
	return (f1 - f0) / time.Duration(calls), (m1 - m0) / time.Duration(calls), nil
}

// cpu is the CPU section: CPU per call of the bridge process and of mcpd
// for tools/call echo and cached tools/list through each front, and of
// mcpd for the same calls over gRPC, each the median of interleaved rounds.
func (b *bench) cpu(ctx context.Context, d *daemon, t target) error {
	b.progress("cpu per call: %s", t.Name)
	fronts, err := b.startFronts(ctx, d, t, 1, "cpu")
	if err != nil {
		return err
	}
	defer closeFronts(fronts)
	client := d.client()
	type path struct {
		name string
		pid  int
		echo func() error
		list func() error
	}
	paths := []path{{
		name: "gRPC",
		echo: func() error { return callEcho(ctx, client, t.Name) },
		list: func() error {
			_, err := client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: t.Name})
			return err
		},
	}}
	for _, f := range fronts {
		paths = append(paths, path{
			name: f.name, pid: f.pid,
			echo: func() error { return f.echo(ctx) },
			list: func() error { _, err := f.list(ctx); return err },
		})
	}
	gf, err := b.startGRPCFloor(ctx, d.socket, t)
	if err != nil {
		return err
	}
	defer gf.close()
	paths = append(paths, path{
		name: frontGRPCFloor, pid: gf.pid(),
		echo: func() error { return gf.echo(ctx) },
		list: func() error { _, err := gf.call(ctx, "tools/list", nil); return err },
	})
	type cell struct {
		path       path
		op         string
		f          func() error
		front, mcd []time.Duration
	}
	var cells []*cell
	for _, p := range paths {
		cells = append(cells, &cell{path: p, op: opEcho, f: p.echo}, &cell{path: p, op: opList, f: p.list})
	}
	// Interleaved rounds, each cell a share of the calls: the machine's
	// load moves every path's figure alike, not one path's.
	rounds := max(b.o.rounds, 1)
	calls := max(b.cpuCalls()/rounds, 200)
	for r := range rounds {
		for _, i := range rotate(len(cells), r) {
			c := cells[i]
			fc, mc, err := cpuPerCall(calls, c.path.pid, d.pid(), c.f)
			if err != nil {
				return fmt.Errorf("cpu %s %s: %w", c.path.name, c.op, err)
			}
			c.front, c.mcd = append(c.front, fc), append(c.mcd, mc)
		}
	}
	if err := b.faceDoor(ctx, t.Name, d.pid(), paths[0].echo, paths[0].list, fronts); err != nil {
		return err
	}
	for _, c := range cells {
		mc := medianDur(c.mcd)
		if c.path.name == frontHTTPFloor {
			mc = 0 // mcpd plays no part
		}
		b.rep.CPU = append(b.rep.CPU, cpuRow{Server: t.Name, Path: c.path.name, Op: c.op, Calls: calls * rounds,
			Front: us(medianDur(c.front)), Mcpd: us(mc)})
	}
	return nil
}
