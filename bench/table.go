package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// checkTargets compares the run with the benchmark targets.
func (b *bench) checkTargets() {
	r := &b.rep
	add := func(name, target string, v float64, unit string, met bool) {
		r.Targets = append(r.Targets, targetCheck{Name: name, Target: target, Value: v, Unit: unit, Met: met})
	}
	for _, o := range r.Overhead {
		add("mcpd added latency p50 ("+o.Server+")", "<= 30 us", o.AddedP50, "us", o.AddedP50 <= 30)
	}
	for _, t := range r.Throughput {
		add(fmt.Sprintf("throughput mcpd/direct (%s, %d apps)", t.Server, t.Concurrency), ">= 0.80", t.Ratio, "x", t.Ratio >= 0.8)
	}
	for _, l := range r.Lists {
		if l.Server == "everything" {
			add("tools/list direct/mcpd ("+l.Server+")", ">= 10", l.Speedup, "x", l.Speedup >= 10)
		}
		add("tools/list mcpd/bare gRPC ("+l.Server+")", "<= 1.5", l.OverBare, "x", l.OverBare <= 1.5)
		add(fmt.Sprintf("tools/list %d apps, mcpd/bare gRPC lists/s (%s)", listClients, l.Server), ">= 0.70", l.RateRatio, "x", l.RateRatio >= 0.7)
	}
	if n := len(r.Memory); n > 0 {
		m := r.Memory[n-1]
		add(fmt.Sprintf("memory PSS shared/separate (N=%d)", m.Apps), "<= 0.30", m.PSSRatio, "x", m.PSSRatio <= 0.3)
		add(fmt.Sprintf("memory RSS shared/separate (N=%d)", m.Apps), "<= 0.15", m.RSSRatio, "x", m.RSSRatio <= 0.15)
	}
	for _, f := range r.FanOut {
		if f.Apps == 100 {
			add("fan-out p99 (100 apps)", "<= 5 ms", f.P99/1000, "ms", f.P99 <= 5000)
		}
	}
	if rc := r.Recovery; rc != nil {
		add("recovery minus cold start", "<= 20 ms", rc.Added, "ms", rc.Added <= 20)
	}
	if r.Startup.Servers > 0 { // measured (not left out by -sections)
		idle := float64(r.Daemon.IdleRSS) / (1 << 20)
		add(fmt.Sprintf("mcpd idle RSS (%d lazy servers)", r.Daemon.IdleServers), "<= 25 MiB", idle, "MiB", idle <= 25)
		add("mcpd start to socket answering", "<= 50 ms", r.Startup.ReadyMs, "ms", r.Startup.ReadyMs <= 50)
	}
	for _, o := range r.Overhead {
		add("mcpd − relay latency p50 ("+o.Server+", 1 app)", "<= 0 us", o.McpdOverRelayP50, "us", o.McpdOverRelayP50 <= 0)
	}
	for _, t := range r.Throughput {
		if t.Concurrency >= 16 {
			add(fmt.Sprintf("throughput mcpd/relay (%s, %d apps)", t.Server, t.Concurrency), ">= 1.00", t.McpdOverRelay, "x", t.McpdOverRelay >= 1)
			add(fmt.Sprintf("throughput mcpd unary/relay (%s, %d apps)", t.Server, t.Concurrency), ">= 1.00", t.UnaryOverRelay, "x", t.UnaryOverRelay >= 1)
		}
		if t.Concurrency == 16 {
			add(fmt.Sprintf("mcpd − relay latency p50 (%s, 16 apps)", t.Server), "<= 0 us", t.McpdOverRelayP50, "us", t.McpdOverRelayP50 <= 0)
			add(fmt.Sprintf("mcpd unary − relay latency p50 (%s, 16 apps)", t.Server), "<= 0 us", t.UnaryOverRelayP50, "us", t.UnaryOverRelayP50 <= 0)
		}
	}
	for _, c := range r.CPURatios {
		add(fmt.Sprintf("mcpd CPU, %s / %s (%s)", c.Op, c.Baseline, c.Server), "<= 0.70", c.Ratio, "x", c.Ratio <= 0.7)
	}
	b.checkFrontTargets()
	b.checkScaleTargets() // scaletable.go
}

func mib(b int64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

// printReport prints the report as one table per section.
func printReport(w io.Writer, r *report) {
	m := r.Machine
	fmt.Fprintf(w, "mcpd-bench (%s): %d rounds, %d calls per variant per round\n", r.Mode, r.Rounds, r.Iterations)
	fmt.Fprintf(w, "machine: %d CPUs (%s), %s RAM, kernel %s, %s, node %s, load %s\n\n",
		m.CPUs, m.CPUModel, m.MemTotal, m.Kernel, m.GoVersion, m.Node, m.Load)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	printOverhead(w, tw, r)
	endTable(w, tw)
	printThroughput(w, tw, r)
	endTable(w, tw)
	printLists(w, tw, r)
	endTable(w, tw)
	printFronts(w, tw, r) // fronttable.go
	printMemory(w, tw, r)
	printFleet(w, r) // fleet.go
	printFanOut(w, tw, r)
	printRecovery(w, r)
	printStartup(w, tw, r)
	printScale(w, tw, r)   // scaletable.go
	printTrust(w, r.Trust) // trust.go
	printTargets(w, tw, r)
	fmt.Fprintf(w, "processes started: %d; left running: %v\n", r.Processes.Started, r.Processes.LeftRunning)
}

// startTable prints a section's title to w and its table header to tw.
func startTable(w io.Writer, tw *tabwriter.Writer, title, header string) {
	fmt.Fprintf(w, "%s\n", title)
	fmt.Fprintln(tw, header)
}

// endTable flushes tw's table and leaves a blank line after it.
func endTable(w io.Writer, tw *tabwriter.Writer) {
	tw.Flush()
	fmt.Fprintln(w)
}

// printOverhead prints section 1: call latency, then the added latency.
func printOverhead(w io.Writer, tw *tabwriter.Writer, r *report) {
	startTable(w, tw, "1. call overhead: tools/call echo, sequential, µs (median of per-round percentiles)",
		"server\tdirect p50\tdirect p99\tmcpd p50\tmcpd p99\tbare gRPC p50\tbare gRPC p99\tbare stream p50\trelay p50\trelay p99\tmcpd/direct p50\t")
	for _, o := range r.Overhead {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2fx\t\n", o.Server,
			o.DirectP50, o.DirectP99, o.McpdP50, o.McpdP99, o.BareP50, o.BareP99, o.BareStreamP50,
			o.RelayP50, o.RelayP99, o.RatioP50)
	}
	tw.Flush()
	fmt.Fprintln(w, "added latency, µs p50 (median of per-round differences): mcpd − direct − bare unary; the same with the")
	fmt.Fprintln(w, "bare stream; relay − direct − bare unary (any proxy's hop); mcpd − relay (mcpd's own code)")
	fmt.Fprintln(tw, "server\tmcpd added\tadded p99\tadded vs stream\trelay added\tmcpd − relay\t")
	for _, o := range r.Overhead {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", o.Server,
			o.AddedP50, o.AddedP99, o.AddedStreamP50, o.RelayAddedP50, o.McpdOverRelayP50)
	}
}

// printLists prints section 3: sequential list latency, then lists/s with
// many apps at once.
func printLists(w io.Writer, tw *tabwriter.Writer, r *report) {
	startTable(w, tw, "3. tools/list, sequential, µs p50 (mcpd: cache status as reported)",
		"server\tbytes\tcache\tdirect\tmcpd\tmcpd p99\tbare gRPC\tdirect/mcpd\tmcpd/bare\tceiling: direct/bare\t")
	for _, l := range r.Lists {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%.2fx\t%.2fx\t%.2fx\t\n", l.Server, l.ListBytes, l.Cache,
			l.DirectP50, l.McpdP50, l.McpdP99, l.BareP50, l.Speedup, l.OverBare, l.Ceiling)
	}
	tw.Flush()
	fmt.Fprintf(w, "with %d apps at once (each its own connection), lists/s (median of rounds)\n", listClients)
	fmt.Fprintln(tw, "server\tthrough mcpd (cached)\tbare gRPC, same bytes\tmcpd/bare\t")
	for _, l := range r.Lists {
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f\t%.2fx\t\n", l.Server, l.McpdRate, l.BareRate, l.RateRatio)
	}
}

// printMemory prints section 4 and mcpd's idle and loaded footprint.
func printMemory(w io.Writer, tw *tabwriter.Writer, r *report) {
	startTable(w, tw, "4. memory: N apps each with its own child vs mcpd + one shared child, MiB",
		"apps\tseparate RSS\tseparate PSS\tmcpd+child RSS\tmcpd+child PSS\tmcpd alone RSS\tRSS ratio\tPSS ratio\t")
	for _, x := range r.Memory {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%.2fx\t%.2fx\t\n", x.Apps, mib(x.SeparateRSS), mib(x.SeparatePSS),
			mib(x.SharedRSS), mib(x.SharedPSS), mib(x.McpdRSS), x.RSSRatio, x.PSSRatio)
	}
	tw.Flush()
	if d := r.Daemon; d.IdleServers > 0 {
		fmt.Fprintf(w, "mcpd idle with %d lazy servers: RSS %s MiB (anonymous %s MiB, the rest its binary and libraries as mapped from the page cache), PSS %s MiB; after %d apps of load: RSS %s MiB (peak %s MiB)\n\n",
			d.IdleServers, mib(d.IdleRSS), mib(d.IdleAnon), mib(d.IdlePSS), d.LoadApps, mib(d.LoadRSS), mib(d.LoadHWM))
	} else {
		fmt.Fprint(w, "mcpd idle: not measured (-sections)\n\n")
	}
}

// printFanOut prints section 5, or why it was not run.
func printFanOut(w io.Writer, tw *tabwriter.Writer, r *report) {
	fmt.Fprintln(w, "5. fan-out: resources/updated to subscribed apps")
	if len(r.FanOut) == 0 {
		fmt.Fprintf(w, "%s\n\n", r.FanOutNote)
		return
	}
	fmt.Fprintln(w, "child stamps the notification → each app receives it, µs (median of per-round percentiles)")
	fmt.Fprintln(w, "bare gRPC: the same apps on a fan-out server with no mcpd code, from the stamp before the call that fires it")
	fmt.Fprintln(tw, "apps through mcpd\tp50\tp99\tbare gRPC p50\tp99\tdirect, 1 app, own child: p50\tp99\tnotifications\t")
	for _, f := range r.FanOut {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t\n", f.Apps, f.P50, f.P99, f.BareP50, f.BareP99,
			f.DirectP50, f.DirectP99, f.Notifications)
	}
	endTable(w, tw)
}

// printRecovery prints section 6, or why it was not run.
func printRecovery(w io.Writer, r *report) {
	fmt.Fprintln(w, "6. recovery: SIGKILLed child with an open subscription")
	rc := r.Recovery
	if rc == nil {
		fmt.Fprintf(w, "%s\n\n", r.RecovNote)
		return
	}
	fmt.Fprintf(w, "ms from the kill, median of %d rounds: subscription live again (restarted event) %.1f, first update after it %.1f;\n",
		rc.Rounds, rc.Total, rc.FirstUpdate)
	fmt.Fprintf(w, "cold start (spawn + handshake, direct) %.1f; added over cold start %.1f\n", rc.ColdStart, rc.Added)
	fmt.Fprintf(w, "steps: exit seen and restart scheduled %.1f, restart backoff + spawn %.1f, handshake %.1f, re-subscribe %.1f;\n",
		rc.Detect, rc.Backoff, rc.Handshake, rc.Resubscribe)
	fmt.Fprintf(w, "mcpd's own part (detect + re-subscribe, without the backoff and the child's start) %.1f\n\n", rc.McpdOwn)
}

// printStartup prints section 7, or that it was not run.
func printStartup(w io.Writer, tw *tabwriter.Writer, r *report) {
	if r.Startup.Servers == 0 {
		fmt.Fprint(w, "7. startup\nnot run (-sections)\n\n")
		return
	}
	fmt.Fprintf(w, "7. startup: mcpd with %d lazy servers answers its socket after %.1f ms\n", r.Startup.Servers, r.Startup.ReadyMs)
	fmt.Fprintln(tw, "server\tfirst call through mcpd (ms)\twarm call (µs)\tdirect spawn+handshake (ms)\t")
	for _, l := range r.Lazy {
		fmt.Fprintf(tw, "%s\t%.1f\t%.1f\t%.1f\t\n", l.Server, l.FirstCallMs, l.WarmCallUs, l.DirectCold)
	}
	endTable(w, tw)
}

// printTargets prints each benchmark target against this run.
func printTargets(w io.Writer, tw *tabwriter.Writer, r *report) {
	fmt.Fprintln(w, "targets")
	fmt.Fprintln(tw, "target\tgoal\tthis run\tmet\t")
	for _, t := range r.Targets {
		met := "yes"
		if !t.Met {
			met = "NO"
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f %s\t%s\t\n", t.Name, t.Target, t.Value, t.Unit, met)
	}
	endTable(w, tw)
}

// printThroughput prints section 2: calls/s, then latency and CPU per call
// under the load.
func printThroughput(w io.Writer, tw *tabwriter.Writer, r *report) {
	fmt.Fprintln(w, "2. throughput: concurrent apps on one shared child, calls/s (median of rounds)")
	fmt.Fprintln(tw, "server\tapps\tdirect (pipelined)\tthrough mcpd\tmcpd unary\trelay\tmcpd/direct\trelay/direct\tmcpd/relay\tunary/relay\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.2fx\t%.2fx\t%.2fx\t%.2fx\t\n", t.Server, t.Concurrency,
			t.Direct, t.Mcpd, t.McpdUnary, t.Relay, t.Ratio, t.RelayRatio, t.McpdOverRelay, t.UnaryOverRelay)
	}
	tw.Flush()
	fmt.Fprintln(w, "latency under that load, µs p50 (median of rounds); mcpd − relay: median of per-round differences")
	fmt.Fprintln(tw, "server\tapps\tmcpd\tmcpd unary\trelay\tmcpd − relay\tunary − relay\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", t.Server, t.Concurrency,
			t.McpdP50, t.McpdUnaryP50, t.RelayP50, t.McpdOverRelayP50, t.UnaryOverRelayP50)
	}
	tw.Flush()
	fmt.Fprintln(w, "CPU per call under that load, µs (utime+stime of mcpd, or of the relay process, over each measurement; median of rounds)")
	fmt.Fprintln(tw, "server\tapps\tmcpd\tmcpd unary\trelay\tmcpd/relay\tunary/relay\t")
	for _, t := range r.Throughput {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.2fx\t%.2fx\t\n", t.Server, t.Concurrency,
			t.McpdCPU, t.McpdUnaryCPU, t.RelayCPU, ratio(t.McpdCPU, t.RelayCPU), ratio(t.McpdUnaryCPU, t.RelayCPU))
	}
}
