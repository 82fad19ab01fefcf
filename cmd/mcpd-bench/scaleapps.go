package main

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// scaleAppsRow is mcpd's cost at n connected apps: each its own gRPC
// connection, first idle (one ListServers each, so the connection is
// open), then each with a Subscribe stream on demo://counter; then the
// fan-out of one notification to all of them.
type scaleAppsRow struct {
	Apps int `json:"apps"`
	// IdlePerApp and SubPerApp are mcpd's VmRSS growth per app over the
	// same daemon with no app, idle and subscribed.
	IdlePerApp float64 `json:"idle_rss_per_app_bytes"`
	SubPerApp  float64 `json:"subscribed_rss_per_app_bytes"`
	P50        float64 `json:"fanout_p50_us"`
	P99        float64 `json:"fanout_p99_us"`
	// CPUPerDelivery is mcpd's CPU over the touches, less that many echo
	// calls' CPU (the call that makes the child notify), per delivery.
	CPUPerDelivery float64 `json:"mcpd_cpu_us_per_delivery"`
	Touches        int     `json:"touches"`
}

// scaleAppCounts are the apps curve's points.
func (b *bench) scaleAppCounts() []int {
	if b.o.smoke {
		return []int{1, 10}
	}
	return []int{1, 10, 100, 1000}
}

// scaleApps measures the apps curve on a fresh daemon with the demo server.
func (b *bench) scaleApps(ctx context.Context) error {
	t := b.targets()[0]
	b.progress("scale: apps")
	d, err := startDaemon(ctx, b.reg, b.o.mcpd, map[string]serverConfig{t.Name: {Command: t.Command, Args: t.Args}})
	if err != nil {
		return err
	}
	defer d.stop()
	client := d.client()
	for range 200 { // start the child, warm the paths the apps use
		if err := callEcho(ctx, client, t.Name); err != nil {
			return err
		}
	}
	if _, err := d.serverPid(ctx, t.Name); err != nil {
		return err
	}
	touchCPU, err := mcpdCPUPer(d.pid(), 200, func() error { return touchThroughMcpd(ctx, client, t.Name) })
	if err != nil {
		return err
	}
	for _, n := range b.scaleAppCounts() {
		row, err := b.scaleAppsAt(ctx, d, t, n, touchCPU)
		if err != nil {
			return fmt.Errorf("%d apps: %w", n, err)
		}
		b.rep.Scale.Apps = append(b.rep.Scale.Apps, row)
	}
	return nil
}

// settledRSS is pid's VmRSS after a GC-friendly pause, the lowest of a few
// samples (the runtime returns freed memory in the background).
func settledRSS(pid int) (int64, error) {
	var low int64
	for i := range 5 {
		time.Sleep(100 * time.Millisecond)
		rss, err := statusField(pid, "VmRSS")
		if err != nil {
			return 0, err
		}
		if i == 0 || rss < low {
			low = rss
		}
	}
	return low, nil
}

// mcpdCPUPer is pid's CPU per call of f over calls sequential calls.
func mcpdCPUPer(pid, calls int, f func() error) (time.Duration, error) {
	_, c, err := cpuPerCall(calls, 0, pid, f)
	return c, err
}

func (b *bench) scaleAppsAt(ctx context.Context, d *daemon, t target, n int, touchCPU time.Duration) (scaleAppsRow, error) {
	row := scaleAppsRow{Apps: n}
	base, err := settledRSS(d.pid())
	if err != nil {
		return row, err
	}
	conns := make([]*grpc.ClientConn, 0, n)
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	for range n {
		conn, err := dialApp(d.socket)
		if err != nil {
			return row, err
		}
		conns = append(conns, conn)
		if _, err := mcpdv1.NewMcpdClient(conn).ListServers(ctx, &mcpdv1.ListServersRequest{}); err != nil {
			return row, fmt.Errorf("list servers: %w", err)
		}
	}
	idle, err := settledRSS(d.pid())
	if err != nil {
		return row, err
	}
	row.IdlePerApp = float64(idle-base) / float64(n)
	for _, c := range conns {
		_ = c.Close()
	}
	conns = conns[:0]

	recv := make(chan receipt, n*4)
	errs := make(chan error, 1)
	apps, err := openFanOutApps(ctx, d, t.Name, n, recv, errs)
	if err != nil {
		return row, err
	}
	defer closeFanOutApps(apps)
	sub, err := settledRSS(d.pid())
	if err != nil {
		return row, err
	}
	row.SubPerApp = float64(sub-base) / float64(n)

	touches := 50
	if b.o.smoke || n >= 1000 {
		touches = 20
	}
	client := d.client()
	var all latencies
	cpu0, err := procCPU(d.pid())
	if err != nil {
		return row, err
	}
	for range touches {
		if err := touchThroughMcpd(ctx, client, t.Name); err != nil {
			return row, err
		}
		first, err := awaitAny(ctx, recv, errs)
		if err != nil {
			return row, err
		}
		got, err := awaitTouch(ctx, recv, errs, first.count, n-1)
		if err != nil {
			return row, err
		}
		all = append(append(all, got...), first.latency)
	}
	cpu1, err := procCPU(d.pid())
	if err != nil {
		return row, err
	}
	row.Touches = touches
	row.P50, row.P99 = us(all.quantile(0.5)), us(all.quantile(0.99))
	net := cpu1 - cpu0 - time.Duration(touches)*touchCPU
	row.CPUPerDelivery = us(max(net, 0) / time.Duration(touches*n))
	return row, nil
}
