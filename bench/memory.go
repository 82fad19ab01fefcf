package main

import (
	"context"
	"fmt"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// memoryTarget is the server whose copies section 4 counts: server-everything
// (node), the typical heavy child, or the demo server when node is missing.
func (b *bench) memoryTarget() target {
	ts := b.targets()
	return ts[len(ts)-1]
}

// memory is section 4: N apps each running their own child vs mcpd + one
// shared child used by N apps. The two are never alive at the same time,
// so PSS (which splits shared pages among the processes mapping them) is
// not flattered by the other side's processes.
func (b *bench) memory(ctx context.Context) error {
	t := b.memoryTarget()
	b.progress("memory: %s", t.Name)
	d, err := startDaemon(ctx, b.reg, b.o.mcpd, map[string]serverConfig{t.Name: {Command: t.Command, Args: t.Args}})
	if err != nil {
		return err
	}
	defer d.stop()
	memRounds := 2
	if b.o.smoke {
		memRounds = 1
	}
	for _, n := range b.o.memN {
		var sepR, sepP, shR, shP, mR []float64
		for range memRounds {
			sep, err := b.separateMemory(ctx, t, n)
			if err != nil {
				return err
			}
			shared, alone, err := b.sharedMemory(ctx, d, t, n)
			if err != nil {
				return err
			}
			sepR, sepP = append(sepR, float64(sep.RSS)), append(sepP, float64(sep.PSS))
			shR, shP = append(shR, float64(shared.RSS)), append(shP, float64(shared.PSS))
			mR = append(mR, float64(alone.RSS))
		}
		row := memoryRow{
			Apps:        n,
			SeparateRSS: int64(medianF(sepR)), SeparatePSS: int64(medianF(sepP)),
			SharedRSS: int64(medianF(shR)), SharedPSS: int64(medianF(shP)),
			McpdRSS: int64(medianF(mR)),
		}
		row.RSSRatio = ratio(float64(row.SharedRSS), float64(row.SeparateRSS))
		row.PSSRatio = ratio(float64(row.SharedPSS), float64(row.SeparatePSS))
		b.rep.Memory = append(b.rep.Memory, row)
	}
	return nil
}

// separateMemory starts n copies of t, each handshaken and called once as
// its app would, and sums their process trees' memory.
func (b *bench) separateMemory(ctx context.Context, t target, n int) (memory, error) {
	var clients []*direct
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	for range n {
		c, _, err := startDirect(ctx, b.reg, t)
		if err != nil {
			return memory{}, err
		}
		clients = append(clients, c)
		if err := c.echo(ctx); err != nil {
			return memory{}, err
		}
	}
	var total memory
	for _, c := range clients {
		m, err := treeMemory(c.pid())
		if err != nil {
			return memory{}, err
		}
		total = total.add(m)
	}
	return total, nil
}

// sharedMemory starts t in mcpd, has n apps (connections) call it, and
// measures mcpd's process tree (mcpd + child) and mcpd alone; then stops
// the child again.
func (b *bench) sharedMemory(ctx context.Context, d *daemon, t target, n int) (tree, alone memory, err error) {
	client := d.client()
	if _, err := client.StartServer(ctx, &mcpdv1.StartServerRequest{Name: t.Name}); err != nil {
		return memory{}, memory{}, fmt.Errorf("start %s in mcpd: %w", t.Name, err)
	}
	closeApps, err := connectApps(d, n, func(c mcpdv1.McpdClient) error { return callEcho(ctx, c, t.Name) })
	defer closeApps()
	if err != nil {
		return memory{}, memory{}, err
	}
	if _, err := d.serverPid(ctx, t.Name); err != nil {
		return memory{}, memory{}, err
	}
	if tree, err = treeMemory(d.pid()); err != nil {
		return memory{}, memory{}, err
	}
	if alone, err = smapsRollup(d.pid()); err != nil {
		return memory{}, memory{}, err
	}
	if _, err := client.StopServer(ctx, &mcpdv1.StopServerRequest{Name: t.Name}); err != nil {
		return memory{}, memory{}, fmt.Errorf("stop %s in mcpd: %w", t.Name, err)
	}
	return tree, alone, nil
}
