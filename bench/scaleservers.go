package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// scaleServersRow is mcpd at m configured (lazy) demo servers, then with
// some of them running.
type scaleServersRow struct {
	Servers int     `json:"servers"`
	IdleRSS int64   `json:"idle_rss_bytes"`
	ReadyMs float64 `json:"start_to_socket_answering_ms"`
	// StatusP50 is GetStatus latency, all lazy and then with Running up.
	StatusP50        float64 `json:"status_p50_us"`
	Running          int     `json:"running"`
	RunningRSS       int64   `json:"running_mcpd_rss_bytes"`
	RunningStatusP50 float64 `json:"running_status_p50_us"`
	// ReloadMs is a ReloadConfig that changes one running server's args;
	// Untouched is whether the diff restarted only it and every other
	// running server kept its pid.
	ReloadMs  float64 `json:"one_server_reload_ms"`
	Untouched bool    `json:"others_untouched"`
}

func (b *bench) scaleServerCounts() (counts []int, running int) {
	counts, running = []int{10, 100, 500}, 50
	if b.o.smoke {
		counts, running = []int{10, 100}, 5
	}
	if b.o.scale.servers != nil {
		counts = b.o.scale.servers
	}
	return counts, running
}

// scaleServers measures the servers curve, a fresh daemon per point.
func (b *bench) scaleServers(ctx context.Context) error {
	b.progress("scale: configured servers")
	counts, running := b.scaleServerCounts()
	for _, m := range counts {
		row, err := b.scaleServersAt(ctx, m, min(running, m))
		if err != nil {
			return fmt.Errorf("%d servers: %w", m, err)
		}
		b.rep.Scale.Servers = append(b.rep.Scale.Servers, row)
	}
	return nil
}

func demoServers(demo string, m int) map[string]serverConfig {
	servers := map[string]serverConfig{}
	for i := range m {
		name := fmt.Sprintf("demo%03d", i)
		servers[name] = serverConfig{Command: demo, Args: []string{"--name", name}}
	}
	return servers
}

// statusP50 is the median GetStatus latency over n calls.
func statusP50(ctx context.Context, c mcpdv1.McpdClient, n int) (float64, error) {
	l, err := timeSequential(n, func() error {
		_, err := c.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("status: %w", err)
	}
	return us(l.quantile(0.5)), nil
}

func (b *bench) scaleServersAt(ctx context.Context, m, running int) (scaleServersRow, error) {
	row := scaleServersRow{Servers: m, Running: running}
	servers := demoServers(b.o.demo, m)
	rounds := max(b.o.rounds, 3)
	var ready []float64
	for range rounds - 1 { // start-up alone; the last start is measured below too
		d, err := startDaemon(ctx, b.reg, b.o.mcpd, servers)
		if err != nil {
			return row, err
		}
		ready = append(ready, ms(d.ready))
		d.stop()
	}
	d, err := startDaemon(ctx, b.reg, b.o.mcpd, servers)
	if err != nil {
		return row, err
	}
	defer d.stop()
	row.ReadyMs = medianF(append(ready, ms(d.ready)))
	if row.IdleRSS, err = settledRSS(d.pid()); err != nil {
		return row, err
	}
	client := d.client()
	if row.StatusP50, err = statusP50(ctx, client, 200); err != nil {
		return row, err
	}
	names := make([]string, 0, m)
	for n := range servers {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names[:running] {
		if _, err := client.StartServer(ctx, &mcpdv1.StartServerRequest{Name: n}); err != nil {
			return row, fmt.Errorf("start %s: %w", n, err)
		}
	}
	before, err := runningPids(ctx, d)
	if err != nil {
		return row, err
	}
	if row.RunningRSS, err = settledRSS(d.pid()); err != nil {
		return row, err
	}
	if row.RunningStatusP50, err = statusP50(ctx, client, 200); err != nil {
		return row, err
	}
	// Change one running server's args, reload, compare.
	changed := names[0]
	servers[changed] = serverConfig{Command: b.o.demo, Args: []string{"--name", changed + "-changed"}}
	cfg, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		return row, err
	}
	if err := os.WriteFile(d.cfgPath, cfg, 0o600); err != nil {
		return row, err
	}
	start := time.Now()
	resp, err := client.ReloadConfig(ctx, &mcpdv1.ReloadConfigRequest{})
	row.ReloadMs = ms(time.Since(start))
	if err != nil {
		return row, fmt.Errorf("reload: %w", err)
	}
	if !resp.GetApplied() {
		return row, fmt.Errorf("reload not applied: %s", resp.GetError())
	}
	after, err := runningPids(ctx, d)
	if err != nil {
		return row, err
	}
	diff := resp.GetDiff()
	row.Untouched = slices.Equal(diff.GetRestarted(), []string{changed}) && len(diff.GetAdded())+len(diff.GetRemoved())+len(diff.GetUpdated()) == 0 &&
		len(diff.GetUnchanged()) == m-1
	for n, pid := range before {
		if n != changed && after[n] != pid {
			row.Untouched = false
		}
	}
	return row, nil
}

// runningPids maps each running server of d to its pid (and records them
// for the final check).
func runningPids(ctx context.Context, d *daemon) (map[string]int64, error) {
	st, err := d.client().GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	out := map[string]int64{}
	for _, s := range st.GetServers() {
		if s.GetPid() > 0 {
			out[s.GetName()] = s.GetPid()
			d.reg.add(int(s.GetPid()))
		}
	}
	return out, nil
}
