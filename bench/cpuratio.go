package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// cpuRatioRow is mcpd's CPU per operation against a baseline process doing
// the least the same operation needs: for tools/call the relay (relay.go),
// a gRPC-to-stdio proxy with its own child; for a cached list a bare gRPC
// server returning as many bytes. Each figure is utime+stime of that one
// process (not its children) over sequential calls, the median of
// interleaved rounds.
type cpuRatioRow struct {
	Server   string  `json:"server"`
	Op       string  `json:"op"`
	Mcpd     float64 `json:"mcpd_cpu_us_per_op"`
	Baseline string  `json:"baseline"`
	Base     float64 `json:"baseline_cpu_us_per_op"`
	Ratio    float64 `json:"mcpd_over_baseline"`
}

// cpuRatios measures the cpuRatioRows of t: tools/call echo through mcpd's
// streaming CallTool and its unary CallToolUnary against the relay, and a
// cached tools/list against the bare server's blob of the same size.
func (b *bench) cpuRatios(ctx context.Context, d *daemon, bareSrv *bare, t target) error {
	rl, err := startRelay(ctx, b.reg, filepath.Join(b.tmp, "relay-cpu-"+t.Name+".sock"), t)
	if err != nil {
		return err
	}
	defer rl.close()
	client := d.client()
	listReq := &mcpdv1.ListToolsRequest{Server: t.Name}
	resp, err := client.ListTools(ctx, listReq)
	if err != nil {
		return fmt.Errorf("list tools of %s: %w", t.Name, err)
	}
	size := int64(len(resp.GetServers()[0].GetItemsJson()))
	type op struct {
		name string
		pid  int
		f    func() error
	}
	ops := []op{
		{name: "tools/call echo (stream)", pid: d.pid(), f: func() error { return callEcho(ctx, client, t.Name) }},
		{name: "tools/call echo (unary)", pid: d.pid(), f: func() error { return callEchoUnary(ctx, client, t.Name) }},
		{name: "relay", pid: rl.cmd.Process.Pid, f: func() error { return rl.relayEcho(ctx, t.Name) }},
		{name: "tools/list (cached)", pid: d.pid(), f: func() error {
			_, err := client.ListTools(ctx, listReq)
			return err
		}},
		{name: "bare blob", pid: bareSrv.cmd.Process.Pid, f: func() error { return bareSrv.blob(ctx, size) }},
	}
	for _, o := range ops { // warm
		for range 50 {
			if err := o.f(); err != nil {
				return fmt.Errorf("cpu %s: %w", o.name, err)
			}
		}
	}
	calls := b.cpuCalls()
	per := make([][]time.Duration, len(ops))
	for r := range b.o.rounds {
		for _, i := range rotate(len(ops), r) {
			_, c, err := cpuPerCall(calls, 0, ops[i].pid, ops[i].f)
			if err != nil {
				return fmt.Errorf("cpu %s: %w", ops[i].name, err)
			}
			per[i] = append(per[i], c)
		}
	}
	med := func(i int) float64 { return us(medianDur(per[i])) }
	for _, row := range []struct {
		op, base string
		m, bl    int
	}{
		{ops[0].name, "relay", 0, 2},
		{ops[1].name, "relay", 1, 2},
		{ops[3].name, "bare gRPC blob", 3, 4},
	} {
		b.rep.CPURatios = append(b.rep.CPURatios, cpuRatioRow{Server: t.Name, Op: row.op, Mcpd: med(row.m),
			Baseline: row.base, Base: med(row.bl), Ratio: ratio(med(row.m), med(row.bl))})
	}
	return nil
}
