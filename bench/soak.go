package main

import (
	"context"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// soakRow is the soak: a steady mixed load (echo calls, cached lists,
// subscriptions opened and closed) on a few demo servers for Duration,
// one child SIGKILLed every KillEvery, with mcpd's RSS and goroutines
// sampled; slopes are fitted after the warm-up (the first fifth).
type soakRow struct {
	DurationS  float64 `json:"duration_s"`
	KillEveryS float64 `json:"kill_every_s"`
	Kills      int     `json:"kills"`
	Calls      int64   `json:"calls"`
	Failed     int64   `json:"calls_failed"` // calls that met a killed child
	Samples    int     `json:"samples"`
	// RSS and goroutine slopes per minute with their standard errors.
	RSSSlope        float64 `json:"rss_slope_bytes_per_min"`
	RSSSlopeSE      float64 `json:"rss_slope_se"`
	GoSlope         float64 `json:"goroutines_slope_per_min"`
	GoSlopeSE       float64 `json:"goroutines_slope_se"`
	RSSMean         float64 `json:"rss_mean_bytes"`
	GoMean          float64 `json:"goroutines_mean"`
	StartRSS        int64   `json:"rss_before_load_bytes"`
	StartGo         float64 `json:"goroutines_before_load"`
	AfterRSS        int64   `json:"rss_after_load_bytes"`
	AfterGo         float64 `json:"goroutines_after_load"`
	RSSSeries       []int64 `json:"rss_series_bytes"`
	GoSeries        []int64 `json:"goroutines_series"`
	SampleEveryS    float64 `json:"sample_every_s"`
	FlatRSS, FlatGo bool
}

const soakServers = 3

// soak runs the soak section.
func (b *bench) soak(ctx context.Context) error {
	dur, killEvery, sampleEvery := b.soakTimes()
	b.progress("soak: %s, a child killed every %s", dur, killEvery)
	addr, err := freeLoopbackAddr()
	if err != nil {
		return err
	}
	d, err := startDaemonWith(ctx, b.reg, b.o.mcpd, demoServers(b.o.demo, soakServers), daemonSettings{metricsAddr: addr})
	if err != nil {
		return err
	}
	defer d.stop()
	names, err := startSoakServers(ctx, d.client())
	if err != nil {
		return err
	}
	row := soakRow{DurationS: dur.Seconds(), KillEveryS: killEvery.Seconds(), SampleEveryS: sampleEvery.Seconds()}
	if row.StartRSS, row.StartGo, err = soakSample(ctx, d); err != nil {
		return err
	}
	lctx, stop := context.WithTimeout(ctx, dur)
	defer stop()
	var calls, failed atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() { soakWorker(lctx, d, names, w, &calls, &failed, errs) })
	}
	series, goSeries := soakObserve(ctx, lctx, d, names, &row, killEvery, sampleEvery, errs)
	wg.Wait()
	select {
	case err := <-errs:
		return fmt.Errorf("soak: %w", err)
	default:
	}
	row.Calls, row.Failed, row.Samples = calls.Load(), failed.Load(), len(series)
	warm := len(series) / 5
	row.RSSSlope, row.RSSSlopeSE, row.RSSMean = slope(series[warm:])
	row.GoSlope, row.GoSlopeSE, row.GoMean = slope(goSeries[warm:])
	row.FlatRSS = flat(row.RSSSlope, row.RSSSlopeSE, row.RSSMean, dur)
	row.FlatGo = flat(row.GoSlope, row.GoSlopeSE, row.GoMean, dur)
	time.Sleep(2 * time.Second) // let the last restart and stream teardown finish
	if row.AfterRSS, row.AfterGo, err = soakSample(ctx, d); err != nil {
		return err
	}
	b.rep.Soak = &row
	return nil
}

// soakTimes is the soak's duration, how often it kills a child and how
// often it samples mcpd: ten minutes unless -soak or -smoke says otherwise,
// with four kills and forty samples in a run under two minutes.
func (b *bench) soakTimes() (dur, killEvery, sampleEvery time.Duration) {
	dur, killEvery, sampleEvery = 10*time.Minute, time.Minute, 5*time.Second
	if b.o.soakDur > 0 {
		dur = b.o.soakDur
	} else if b.o.smoke {
		dur = 20 * time.Second
	}
	if dur < 2*time.Minute {
		killEvery, sampleEvery = dur/4, dur/40
	}
	return dur, killEvery, sampleEvery
}

// startSoakServers starts the soak's servers with an echo call each and
// returns their names.
func startSoakServers(ctx context.Context, client mcpdv1.McpdClient) ([]string, error) {
	names := make([]string, soakServers)
	for i := range names {
		names[i] = fmt.Sprintf("demo%03d", i)
		if err := callEcho(ctx, client, names[i]); err != nil {
			return nil, err
		}
	}
	return names, nil
}

// soakObserve kills one of the servers' children in turn every killEvery
// (counting the kills in row) and samples mcpd's RSS and goroutines every
// sampleEvery (into row's series) until lctx ends. It returns the samples
// as points (minutes since start, value); a failed sample goes to errs if
// there is room.
func soakObserve(ctx, lctx context.Context, d *daemon, names []string, row *soakRow, killEvery, sampleEvery time.Duration, errs chan<- error) (series, goSeries [][2]float64) {
	start := time.Now()
	sample := time.NewTicker(sampleEvery)
	kill := time.NewTicker(killEvery)
	defer sample.Stop()
	defer kill.Stop()
	for {
		select {
		case <-lctx.Done():
			return series, goSeries
		case <-kill.C:
			pids, err := runningPids(ctx, d)
			if err == nil {
				if pid, ok := pids[names[row.Kills%soakServers]]; ok {
					_ = syscall.Kill(int(pid), syscall.SIGKILL)
					row.Kills++
				}
			}
		case <-sample.C:
			rss, gor, err := soakSample(ctx, d)
			if err != nil {
				select {
				case errs <- err:
				default:
				}
				continue
			}
			at := time.Since(start).Minutes()
			series = append(series, [2]float64{at, float64(rss)})
			goSeries = append(goSeries, [2]float64{at, gor})
			row.RSSSeries = append(row.RSSSeries, rss)
			row.GoSeries = append(row.GoSeries, int64(gor))
		}
	}
}

// flat reports whether a fitted slope is indistinguishable from zero:
// within two standard errors of it, or moving the mean by under 2 % over
// the whole run.
func flat(s, se, mean float64, dur time.Duration) bool {
	return math.Abs(s) <= 2*se || math.Abs(s*dur.Minutes()) <= 0.02*mean
}

// soakSample is mcpd's VmRSS and its goroutines (go_goroutines).
func soakSample(ctx context.Context, d *daemon) (int64, float64, error) {
	rss, err := statusField(d.pid(), "VmRSS")
	if err != nil {
		return 0, 0, err
	}
	m, err := d.scrapeMetrics(ctx, "go_goroutines")
	if err != nil {
		return 0, 0, err
	}
	return rss, m["go_goroutines"], nil
}

// soakWorker is one app of the soak's load, until ctx ends: worker 0
// opens and closes subscriptions, the others call echo and list tools.
// Failures of calls that met a killed child are counted, not fatal.
func soakWorker(ctx context.Context, d *daemon, names []string, w int, calls, failed *atomic.Int64, errs chan<- error) {
	conn, err := dialApp(d.socket)
	if err != nil {
		errs <- err
		return
	}
	defer conn.Close()
	c := mcpdv1.NewMcpdClient(conn)
	for i := 0; ctx.Err() == nil; i++ {
		name := names[i%len(names)]
		switch {
		case w == 0:
			a, err := openSubApp(ctx, d, name, i)
			if err == nil {
				a.close()
			}
			err = nilIfDone(ctx, err)
			count(calls, failed, err)
		case i%4 == 0:
			_, err := c.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: name})
			count(calls, failed, nilIfDone(ctx, err))
		default:
			count(calls, failed, nilIfDone(ctx, callEchoUnary(ctx, c, name)))
		}
	}
}

func nilIfDone(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func count(calls, failed *atomic.Int64, err error) {
	calls.Add(1)
	if err != nil {
		failed.Add(1)
	}
}

// slope fits y = a + b·x by least squares and returns b, its standard
// error and the mean of y.
func slope(pts [][2]float64) (b, se, mean float64) {
	n := float64(len(pts))
	if n < 3 {
		return 0, math.Inf(1), 0
	}
	var sx, sy float64
	for _, p := range pts {
		sx += p[0]
		sy += p[1]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, p := range pts {
		sxx += (p[0] - mx) * (p[0] - mx)
		sxy += (p[0] - mx) * (p[1] - my)
	}
	if sxx == 0 {
		return 0, math.Inf(1), my
	}
	b = sxy / sxx
	var ssr float64
	for _, p := range pts {
		r := p[1] - (my + b*(p[0]-mx))
		ssr += r * r
	}
	se = math.Sqrt(ssr / (n - 2) / sxx)
	return b, se, my
}
