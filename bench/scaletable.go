package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// printScale prints the scale and soak sections.
func printScale(w io.Writer, tw *tabwriter.Writer, r *report) {
	sc := &r.Scale
	if r.ScaleNote != "" {
		fmt.Fprintf(w, "8. scale: %s\n\n", r.ScaleNote)
	} else {
		fmt.Fprintln(w, "8a. scale: connected apps (each its own connection; RSS growth of mcpd per app; fan-out of one resources/updated; bare: the bare gRPC fan-out server to as many apps, same rounds)")
		fmt.Fprintln(tw, "apps\tidle KiB/app\tsubscribed KiB/app\tfan-out p50 µs\tp99 µs\tmcpd CPU µs/delivery\tbare p50 µs\tbare p99 µs\tbare CPU µs/delivery\ttouches\t")
		for _, a := range sc.Apps {
			fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.0f\t%.0f\t%.2f\t%.0f\t%.0f\t%.2f\t%d\t\n", a.Apps, a.IdlePerApp/1024, a.SubPerApp/1024, a.P50, a.P99, a.CPUPerDelivery,
				a.BareP50, a.BareP99, a.BareCPUPerDelivery, a.Touches)
		}
		tw.Flush()
		if f := fanOutFloorRatios(sc.Apps); f != "" {
			fmt.Fprintln(w, f)
		}
		fmt.Fprintln(w, "8b. scale: configured servers (lazy demo servers; then some running; a reload changing one running server)")
		fmt.Fprintln(tw, "servers\tidle RSS MiB\tstart→socket ms\tstatus p50 µs\trunning\tmcpd RSS MiB\tstatus p50 µs\treload ms\tothers untouched\t")
		for _, s := range sc.Servers {
			fmt.Fprintf(tw, "%d\t%s\t%.1f\t%.0f\t%d\t%s\t%.0f\t%.1f\t%v\t\n", s.Servers, mib(s.IdleRSS), s.ReadyMs, s.StatusP50,
				s.Running, mib(s.RunningRSS), s.RunningStatusP50, s.ReloadMs, s.Untouched)
		}
		tw.Flush()
		fmt.Fprintln(w, "8c. scale: watched URIs over subscribed apps (UpdateSubscription adds, then removes)")
		fmt.Fprintln(tw, "server\tera\tURIs\tapps\tbytes/subscription\tsubscribe µs/URI\tunsubscribe µs/URI\tRSS before MiB\tafter remove MiB\t")
		for _, s := range sc.Subs {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.0f\t%.1f\t%.1f\t%s\t%s\t\n", s.Server, s.Era, s.URIs, s.Apps, s.PerSub, s.SubscribeUs, s.UnsubscribeUs, mib(s.BaseRSS), mib(s.AfterRSS))
		}
		tw.Flush()
		fmt.Fprintln(w, "8d. scale: result size (echo of N bytes each way; mcpd: CallToolUnary)")
		fmt.Fprintln(tw, "bytes\tcalls\tmcpd MB/s\tdirect MB/s\tmcpd/direct\tmcpd alloc bytes per byte carried\t")
		for _, s := range sc.Sizes {
			if s.Error != "" {
				fmt.Fprintf(tw, "%d\t-\t-\t-\t-\t-\t\n", s.Bytes)
				defer fmt.Fprintf(w, "  %d bytes failed: %s\n", s.Bytes, s.Error)
				continue
			}
			fmt.Fprintf(tw, "%d\t%d\t%.1f\t%.1f\t%.2fx\t%.2f\t\n", s.Bytes, s.Calls, s.McpdMB, s.Direct, s.Ratio, s.AllocPerByte)
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if s := r.Soak; s != nil {
		fmt.Fprintf(w, "9. soak: %.0f s, a child killed every %.0f s (%d kills), %d calls (%d met a killed child), %d samples\n",
			s.DurationS, s.KillEveryS, s.Kills, s.Calls, s.Failed, s.Samples)
		fmt.Fprintln(tw, "series\tbefore load\tmean\tslope /min\t± SE\tafter load\tflat\t")
		fmt.Fprintf(tw, "RSS (MiB)\t%s\t%.1f\t%.3f\t%.3f\t%s\t%v\t\n", mib(s.StartRSS), s.RSSMean/(1<<20),
			s.RSSSlope/(1<<20), s.RSSSlopeSE/(1<<20), mib(s.AfterRSS), s.FlatRSS)
		fmt.Fprintf(tw, "goroutines\t%.0f\t%.1f\t%.3f\t%.3f\t%.0f\t%v\t\n", s.StartGo, s.GoMean, s.GoSlope, s.GoSlopeSE, s.AfterGo, s.FlatGo)
		tw.Flush()
		fmt.Fprintln(w)
	}
}

// checkScaleTargets adds the scale and soak targets.
func (b *bench) checkScaleTargets() {
	r := &b.rep
	add := func(name, target string, v float64, unit string, met bool) {
		r.Targets = append(r.Targets, targetCheck{Name: name, Target: target, Value: v, Unit: unit, Met: met})
	}
	sc := &r.Scale
	var cpu10, p99at100 float64
	for _, a := range sc.Apps {
		if a.Apps >= 10 {
			add(fmt.Sprintf("mcpd RSS per idle app (%d apps)", a.Apps), "<= 64 KiB", a.IdlePerApp/1024, "KiB", a.IdlePerApp <= 64<<10)
		}
		switch a.Apps {
		case 10:
			cpu10 = a.CPUPerDelivery
		case 100:
			p99at100 = a.P99
		case 1000:
			if cpu10 > 0 {
				v := ratio(a.CPUPerDelivery, cpu10)
				add("fan-out CPU per delivery, 1000 apps / 10 apps", "<= 1.5", v, "x", v <= 1.5)
			}
			if p99at100 > 0 {
				v := ratio(a.P99, p99at100)
				add("fan-out p99, 1000 apps / 100 apps", "<= 10", v, "x", v <= 10)
			}
		}
	}
	for _, s := range sc.Servers {
		if s.Servers == 500 {
			idle := float64(s.IdleRSS) / (1 << 20)
			add("mcpd idle RSS (500 lazy servers)", "<= 40 MiB", idle, "MiB", idle <= 40)
			add("mcpd start to socket answering (500 lazy servers)", "<= 100 ms", s.ReadyMs, "ms", s.ReadyMs <= 100)
			add("one-server reload (500 servers, 50 running)", "<= 20 ms", s.ReloadMs, "ms", s.ReloadMs <= 20 && s.Untouched)
		}
	}
	for _, s := range sc.Subs {
		if s.URIs >= 1000 {
			add(fmt.Sprintf("mcpd RSS per subscription (%d URIs, %s)", s.URIs, s.Server), "<= 2 KiB", s.PerSub/1024, "KiB", s.PerSub <= 2<<10)
		}
	}
	for _, s := range sc.Sizes {
		if s.Bytes >= 30_000_000 && s.Error == "" {
			add("30 MB result, mcpd/direct MB/s", ">= 0.80", s.Ratio, "x", s.Ratio >= 0.8)
		}
	}
	if s := r.Soak; s != nil {
		add("soak RSS slope indistinguishable from zero", "flat", s.RSSSlope/(1<<20), "MiB/min", s.FlatRSS)
		add("soak goroutine slope indistinguishable from zero", "flat", s.GoSlope, "/min", s.FlatGo)
	}
}

// fanOutFloorRatios compares the growth of mcpd's fan-out, as the targets
// measure it (p99 1000 / 100 apps, CPU per delivery 1000 / 10 apps), with
// the bare gRPC server's in the same rounds: what grows in gRPC and the
// kernel grows in both. "" without those points.
func fanOutFloorRatios(apps []scaleAppsRow) string {
	at := map[int]scaleAppsRow{}
	for _, a := range apps {
		at[a.Apps] = a
	}
	a10, ok10 := at[10]
	a100, ok100 := at[100]
	a1000, ok1000 := at[1000]
	if !ok1000 || (!ok10 && !ok100) {
		return ""
	}
	out := "  growth 1000 apps vs fewer, mcpd (bare gRPC floor):"
	if ok100 {
		out += fmt.Sprintf(" p99 /100 apps %.1fx (%.1fx);", ratio(a1000.P99, a100.P99), ratio(a1000.BareP99, a100.BareP99))
	}
	if ok10 {
		out += fmt.Sprintf(" CPU per delivery /10 apps %.2fx (%.2fx)", ratio(a1000.CPUPerDelivery, a10.CPUPerDelivery),
			ratio(a1000.BareCPUPerDelivery, a10.BareCPUPerDelivery))
	}
	return out
}
