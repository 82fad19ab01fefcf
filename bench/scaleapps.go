package main

import (
	"context"
	"fmt"
	"time"

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
	// BareP50, BareP99 and BareCPUPerDelivery are the same fan-out from
	// the bare gRPC server (a queue and a goroutine per stream, no mcpd
	// code) to as many apps of its own, in the same rounds (scalefloor.go):
	// what gRPC and the kernel cost on this machine.
	BareP50            float64 `json:"bare_fanout_p50_us"`
	BareP99            float64 `json:"bare_fanout_p99_us"`
	BareCPUPerDelivery float64 `json:"bare_cpu_us_per_delivery"`
}

// scaleAppCounts are the apps curve's points.
func (b *bench) scaleAppCounts() []int {
	if b.o.scale.apps != nil {
		return b.o.scale.apps
	}
	if b.o.smoke {
		return []int{1, 10}
	}
	return []int{1, 10, 100, 1000}
}

// scaleTouches is how many notifications the apps curve fans out to n
// apps: 50 (40 at 1000 apps, 20 in a smoke run), and at small n enough
// for at least minDeliveries deliveries, so that the CPU per delivery is
// not below /proc's resolution (clockTick over all of them). The p99 of
// 20 fan-outs is about their slowest one, which one hiccup of a shared
// machine decides.
func (b *bench) scaleTouches(n int) int {
	const minDeliveries, maxTouches = 4000, 1000
	switch {
	case b.o.smoke:
		return 20
	case n >= 1000:
		return 40
	}
	return min(max(50, (minDeliveries+n-1)/n), maxTouches)
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
	fl, err := startFanOutFloor(ctx, b.reg) // scalefloor.go
	if err != nil {
		return err
	}
	defer fl.close()
	for _, n := range b.scaleAppCounts() {
		row, err := b.scaleAppsAt(ctx, d, fl, t, n, touchCPU)
		if err != nil {
			return fmt.Errorf("%d apps: %w", n, err)
		}
		b.rep.Scale.Apps = append(b.rep.Scale.Apps, row)
	}
	return nil
}

// settledRSS is pid's VmRSS after a pause, the lowest of a few samples:
// the runtime returns freed memory in the background, and mcpd, whose heap
// may grow 16 MiB past the live heap under a burst of work, collects and
// returns it 3 s after the burst (internal/gcpace.LowerAfter).
func settledRSS(pid int) (int64, error) {
	var low int64
	for i := range 20 {
		time.Sleep(200 * time.Millisecond)
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

func (b *bench) scaleAppsAt(ctx context.Context, d *daemon, fl *fanOutFloor, t target, n int, touchCPU time.Duration) (scaleAppsRow, error) {
	row := scaleAppsRow{Apps: n}
	base, err := settledRSS(d.pid())
	if err != nil {
		return row, err
	}
	if row.IdlePerApp, err = idleRSSPerApp(ctx, d, n, base); err != nil {
		return row, err
	}
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
	bareApps, err := openBareFanOutApps(ctx, fl.sock, n, recv, errs)
	if err != nil {
		return row, err
	}
	defer closeFanOutApps(bareApps)

	row.Touches = b.scaleTouches(n)
	client := d.client()
	mcpdOnce := func() (latencies, error) {
		if err := touchThroughMcpd(ctx, client, t.Name); err != nil {
			return nil, err
		}
		first, err := awaitAny(ctx, recv, errs)
		if err != nil {
			return nil, err
		}
		got, err := awaitTouch(ctx, recv, errs, first.count, n-1)
		return append(got, first.latency), err
	}
	bareOnce := func() (latencies, error) { return fl.fire(ctx, recv, errs, n) }
	m, bare, err := fanOutSideBySide(row.Touches, d.pid(), fl.pid(), mcpdOnce, bareOnce) // scalefloor.go
	if err != nil {
		return row, err
	}
	row.P50, row.P99 = us(m.lat.quantile(0.5)), us(m.lat.quantile(0.99))
	row.BareP50, row.BareP99 = us(bare.lat.quantile(0.5)), us(bare.lat.quantile(0.99))
	deliveries := time.Duration(row.Touches * n)
	row.CPUPerDelivery = us(max(m.cpu-time.Duration(row.Touches)*touchCPU, 0) / deliveries)
	row.BareCPUPerDelivery = us(max(bare.cpu-time.Duration(row.Touches)*fl.fireCPU, 0) / deliveries)
	return row, nil
}

// idleRSSPerApp is mcpd's RSS growth per app, over base, with n apps
// connected and idle (one ListServers each, so that the connection is
// open); the apps are gone when it returns.
func idleRSSPerApp(ctx context.Context, d *daemon, n int, base int64) (float64, error) {
	closeApps, err := connectApps(d, n, func(c mcpdv1.McpdClient) error {
		if _, err := c.ListServers(ctx, &mcpdv1.ListServersRequest{}); err != nil {
			return fmt.Errorf("list servers: %w", err)
		}
		return nil
	})
	defer closeApps()
	if err != nil {
		return 0, err
	}
	idle, err := settledRSS(d.pid())
	if err != nil {
		return 0, err
	}
	return float64(idle-base) / float64(n), nil
}
