package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/wrapperspb"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// bench is one run.
type bench struct {
	o   *options
	reg *registry
	log io.Writer
	rep report
	tmp string // a private directory for the baselines' sockets
}

// targets returns the servers to benchmark: the Go demo server and, unless
// disabled, server-everything on node.
func (b *bench) targets() []target {
	ts := []target{{Name: "demo", Command: b.o.demo, Args: []string{"--name", "demo"}}}
	if !b.o.noNode {
		ts = append(ts, target{Name: "everything", Command: b.o.node, Args: []string{b.o.everything, "stdio"}})
	}
	return ts
}

func (b *bench) progress(format string, args ...any) {
	fmt.Fprintf(b.log, "mcpd-bench: "+format+"\n", args...)
}

// run measures every section in turn. The main mcpd serves sections 1-3;
// memory, startup and the idle footprint use fresh daemons.
func (b *bench) run(ctx context.Context) error {
	b.rep.Mode = "full"
	if b.o.smoke {
		b.rep.Mode = "smoke"
	}
	b.rep.Rounds, b.rep.Iterations = b.o.rounds, b.o.iters
	b.rep.Machine = describeMachine(b.o)

	dir, err := os.MkdirTemp("", "mcpd-bench-bare-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b.tmp = dir
	bareSock := filepath.Join(dir, "bare.sock")
	bareSrv, err := startBare(ctx, b.reg, bareSock)
	if err != nil {
		return err
	}
	defer bareSrv.close()

	d, err := b.startMainDaemon(ctx)
	if err != nil {
		return err
	}
	defer d.stop()
	if err := b.sharedSections(ctx, d, bareSrv, bareSock); err != nil {
		return err
	}
	d.stop()
	if err := b.freshSections(ctx); err != nil {
		return err
	}
	b.checkTargets()
	b.rep.complete = true
	return nil
}

// startMainDaemon starts the mcpd that serves the targets for the sections
// sharing one daemon, with the HTTP face unless disabled.
func (b *bench) startMainDaemon(ctx context.Context) (*daemon, error) {
	servers := map[string]serverConfig{}
	for _, t := range b.targets() {
		servers[t.Name] = serverConfig{Command: t.Command, Args: t.Args}
	}
	var httpAddr string
	b.rep.HTTPFace = "off (-httpface=false)"
	if b.o.httpFace {
		var err error
		if httpAddr, err = freeLoopbackAddr(); err != nil {
			return nil, err
		}
		b.rep.HTTPFace = "http://" + httpAddr + "/servers/NAME/mcp"
	}
	b.progress("starting mcpd")
	ds := daemonSettings{httpAddr: httpAddr}
	if b.o.mcpdProfile != "" {
		ds.env = []string{"MCPD_CPUPROFILE=" + b.o.mcpdProfile}
	}
	return startDaemonWith(ctx, b.reg, b.o.mcpd, servers, ds)
}

// sharedSections runs the sections served by the main mcpd d: calls,
// throughput, lists, cpu and fan-out, each unless left out by -sections.
func (b *bench) sharedSections(ctx context.Context, d *daemon, bareSrv *bare, bareSock string) error {
	perTarget := []struct {
		section string
		measure func(target) error
	}{
		{"calls", func(t target) error { return b.overhead(ctx, d, bareSrv, t) }},
		{"throughput", func(t target) error { return b.throughput(ctx, d, t) }},
		{"lists", func(t target) error { return b.lists(ctx, d, bareSrv, bareSock, t) }},
	}
	for _, s := range perTarget {
		if !b.o.runs(s.section) {
			continue
		}
		for _, t := range b.targets() {
			if err := s.measure(t); err != nil {
				return err
			}
		}
	}
	if b.o.runs("cpu") {
		for _, t := range b.targets() {
			if err := b.cpu(ctx, d, t); err != nil { // cpu.go
				return err
			}
			if err := b.cpuRatios(ctx, d, bareSrv, t); err != nil { // cpuratio.go
				return err
			}
		}
	} else {
		b.rep.CPUNote = "not run (-sections)"
	}
	if !b.o.runs("fanout") {
		b.rep.FanOutNote = "not run (-sections)"
		return nil
	}
	return b.fanOut(ctx, d, bareSrv, bareSock) // subs.go
}

// freshSections runs the sections that start daemons of their own:
// recovery, memory, startup, scale, soak and trust, each unless left out
// by -sections.
func (b *bench) freshSections(ctx context.Context) error {
	sections := []struct {
		name    string
		measure func(context.Context) error
		skipped *string // the report's note when left out, if any
	}{
		{"recovery", b.recovery, &b.rep.RecovNote}, // recovery.go
		{"memory", b.memory, nil},
		{"fleet", b.fleet, &b.rep.FleetNote}, // fleet.go
		{"startup", b.startup, nil},
		{"scale", b.scale, &b.rep.ScaleNote}, // scale.go
		{"soak", b.soak, nil},                // soak.go
		{"trust", b.trust, nil},              // trust.go
	}
	for _, s := range sections {
		if b.o.runs(s.name) {
			if err := s.measure(ctx); err != nil {
				return err
			}
		} else if s.skipped != nil {
			*s.skipped = "not run (-sections)"
		}
	}
	return nil
}

// overhead is section 1: sequential echo latency direct vs through mcpd vs
// bare gRPC, interleaved in rounds.
func (b *bench) overhead(ctx context.Context, d *daemon, bareSrv *bare, t target) error {
	b.progress("call overhead: %s", t.Name)
	dc, _, err := startDirect(ctx, b.reg, t)
	if err != nil {
		return err
	}
	defer dc.close()
	rl, err := startRelay(ctx, b.reg, filepath.Join(b.tmp, "relay-"+t.Name+".sock"), t)
	if err != nil {
		return err
	}
	defer rl.close()
	client := d.client()
	if err := warmOverhead(ctx, d, dc, client, rl, t.Name); err != nil {
		return err
	}
	// The bare round trip carries about what an echo call carries.
	res, err := dc.call(ctx, "tools/call", echoParams)
	if err != nil {
		return err
	}
	payload := wrapperspb.String(string(res))

	variants := []func() error{ // in the order of the ovh* indices
		func() error { return dc.echo(ctx) },
		func() error { return callEcho(ctx, client, t.Name) },
		func() error { return bareSrv.echo(ctx, payload) },
		func() error { return bareSrv.stream(ctx, payload) },
		func() error { return rl.relayEcho(ctx, t.Name) },
	}
	fronts, err := b.startFronts(ctx, d, t, 1, "calls")
	if err != nil {
		return err
	}
	defer closeFronts(fronts)
	for _, f := range fronts {
		variants = append(variants, func() error { return f.echo(ctx) })
	}
	m, err := b.measureOverhead(variants)
	if err != nil {
		return err
	}
	row := m.row(t.Name)
	row.PayloadBytes = len(payload.Value)
	row.Fronts = frontCallRows(fronts, ovhFirstFront, m.p50s, m.p99s)
	b.rep.Overhead = append(b.rep.Overhead, row)
	return nil
}

// The variants of the call overhead section, by index; the fronts follow.
const (
	ovhDirect = iota
	ovhMcpd
	ovhBare
	ovhBareStream
	ovhRelay
	ovhFirstFront
)

// warmOverhead warms the direct, mcpd and relay paths up: it starts mcpd's
// child lazily, JITs node and fills pools, then checks that mcpd's child
// runs.
func warmOverhead(ctx context.Context, d *daemon, dc *direct, client mcpdv1.McpdClient, rl *bare, server string) error {
	for range 50 {
		if err := dc.echo(ctx); err != nil {
			return err
		}
		if err := callEcho(ctx, client, server); err != nil {
			return err
		}
		if err := rl.relayEcho(ctx, server); err != nil {
			return err
		}
	}
	_, err := d.serverPid(ctx, server)
	return err
}

// overheadRounds is the call overhead section's measurements: each
// variant's per-round p50 and p99, and the per-round differences.
type overheadRounds struct {
	p50s, p99s                                           [][]time.Duration
	added50, added99, addedStream, relayAdded, overRelay []time.Duration
}

// measureOverhead times every variant sequentially in b.o.rounds rounds,
// each round starting with another.
func (b *bench) measureOverhead(variants []func() error) (*overheadRounds, error) {
	n := len(variants)
	m := &overheadRounds{p50s: make([][]time.Duration, n), p99s: make([][]time.Duration, n)}
	for r := range b.o.rounds {
		round := make([]latencies, n)
		for _, v := range rotate(n, r) {
			l, err := timeSequential(b.o.iters, variants[v])
			if err != nil {
				return nil, err
			}
			round[v] = l
		}
		m.add(round)
	}
	return m, nil
}

// add records one round's latencies of every variant.
func (m *overheadRounds) add(round []latencies) {
	for v := range round {
		m.p50s[v] = append(m.p50s[v], round[v].quantile(0.5))
		m.p99s[v] = append(m.p99s[v], round[v].quantile(0.99))
	}
	p50 := func(v int) time.Duration { return round[v].quantile(0.5) }
	p99 := func(v int) time.Duration { return round[v].quantile(0.99) }
	m.relayAdded = append(m.relayAdded, p50(ovhRelay)-p50(ovhDirect)-p50(ovhBare))
	m.overRelay = append(m.overRelay, p50(ovhMcpd)-p50(ovhRelay))
	m.addedStream = append(m.addedStream, p50(ovhMcpd)-p50(ovhDirect)-p50(ovhBareStream))
	m.added50 = append(m.added50, p50(ovhMcpd)-p50(ovhDirect)-p50(ovhBare))
	m.added99 = append(m.added99, p99(ovhMcpd)-p99(ovhDirect)-p99(ovhBare))
}

// row is the section's row for server (payload and fronts aside): medians
// of rounds.
func (m *overheadRounds) row(server string) overheadRow {
	p50 := func(v int) float64 { return us(medianDur(m.p50s[v])) }
	p99 := func(v int) float64 { return us(medianDur(m.p99s[v])) }
	row := overheadRow{
		Server:    server,
		DirectP50: p50(ovhDirect), DirectP99: p99(ovhDirect),
		McpdP50: p50(ovhMcpd), McpdP99: p99(ovhMcpd),
		BareP50: p50(ovhBare), BareP99: p99(ovhBare),
		AddedP50: us(medianDur(m.added50)), AddedP99: us(medianDur(m.added99)),
		BareStreamP50: p50(ovhBareStream), AddedStreamP50: us(medianDur(m.addedStream)),
		RelayP50: p50(ovhRelay), RelayP99: p99(ovhRelay),
		RelayAddedP50: us(medianDur(m.relayAdded)), McpdOverRelayP50: us(medianDur(m.overRelay)),
	}
	row.RatioP50 = ratio(row.McpdP50, row.DirectP50)
	return row
}

// timeSequential runs f n times back to back and returns each duration.
func timeSequential(n int, f func() error) (latencies, error) {
	l := make(latencies, 0, n)
	for range n {
		start := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		l = append(l, time.Since(start))
	}
	return l, nil
}

// throughputConcurrency is section 2's numbers of concurrent apps.
var throughputConcurrency = []int{1, 16, 64}

// throughput is section 2: c apps (each its own gRPC connection) calling
// echo on one shared child through mcpd, against one direct client with c
// requests in flight on its own child (the child's pipelined throughput).
func (b *bench) throughput(ctx context.Context, d *daemon, t target) error {
	b.progress("throughput: %s", t.Name)
	dc, _, err := startDirect(ctx, b.reg, t)
	if err != nil {
		return err
	}
	defer dc.close()
	relaySock := filepath.Join(b.tmp, "relay-"+t.Name+".sock")
	rl, err := startRelay(ctx, b.reg, relaySock, t)
	if err != nil {
		return err
	}
	defer rl.close()
	maxC := throughputConcurrency[len(throughputConcurrency)-1]
	apps := make([]mcpdv1.McpdClient, maxC)
	relayApps := make([]*bare, maxC)
	for i := range apps {
		// The section's own connections, closed at its end so that later
		// sections measure only their own apps.
		conn, err := dialApp(d.socket)
		if err != nil {
			return err
		}
		defer conn.Close()
		apps[i] = mcpdv1.NewMcpdClient(conn)
		if err := callEcho(ctx, apps[i], t.Name); err != nil { // connect and warm
			return err
		}
		rconn, err := dialFloor(relaySock)
		if err != nil {
			return err
		}
		defer rconn.Close()
		relayApps[i] = &bare{conn: rconn}
		if err := relayApps[i].relayEcho(ctx, t.Name); err != nil {
			return err
		}
	}
	fronts, err := b.startFronts(ctx, d, t, maxC, "throughput")
	if err != nil {
		return err
	}
	defer closeFronts(fronts)
	for _, c := range throughputConcurrency {
		variants := []func(i int) error{ // in the order of the tput* indices
			func(int) error { return dc.echo(ctx) },
			func(i int) error { return callEcho(ctx, apps[i], t.Name) },
			func(i int) error { return relayApps[i].relayEcho(ctx, t.Name) },
			func(i int) error { return callEchoUnary(ctx, apps[i], t.Name) },
		}
		for _, f := range fronts {
			variants = append(variants, func(int) error { return f.echo(ctx) })
		}
		// Whose CPU each variant's calls are counted against.
		pids := map[int]int{tputMcpd: d.pid(), tputUnary: d.pid(), tputRelay: rl.cmd.Process.Pid}
		rates, p50s, cpus, err := b.runVariants(c, variants, pids)
		if err != nil {
			return err
		}
		row := throughputRowOf(t.Name, c, rates, p50s)
		row.McpdCPU, row.McpdUnaryCPU, row.RelayCPU = medianF(cpus[tputMcpd]), medianF(cpus[tputUnary]), medianF(cpus[tputRelay])
		for i, f := range fronts {
			rate := medianF(rates[tputFirstFront+i])
			row.Fronts = append(row.Fronts, frontRate{Name: f.name, Rate: rate, Ratio: ratio(rate, row.Direct)})
		}
		b.rep.Throughput = append(b.rep.Throughput, row)
		if c == maxC {
			// mcpd's footprint right after the heaviest load.
			if rss, err := statusField(d.pid(), "VmRSS"); err == nil && rss > b.rep.Daemon.LoadRSS {
				b.rep.Daemon.LoadRSS = rss
			}
			if hwm, err := statusField(d.pid(), "VmHWM"); err == nil && hwm > b.rep.Daemon.LoadHWM {
				b.rep.Daemon.LoadHWM = hwm
			}
			b.rep.Daemon.LoadApps = c
		}
	}
	return b.faceRate(ctx, t.Name, func(i int) error { return callEcho(ctx, apps[i], t.Name) }, fronts) // facedoorrate.go
}

// The variants of the throughput section, by index; the fronts follow.
const (
	tputDirect = iota
	tputMcpd
	tputRelay
	tputUnary
	tputFirstFront
)

// runVariants measures every variant with c apps in b.o.rounds rounds, each
// round starting with another: calls/s and p50 latency per variant and
// round, and for the variants in pids the CPU time (utime+stime) of that
// process per call, µs.
func (b *bench) runVariants(c int, variants []func(i int) error, pids map[int]int) ([][]float64, [][]time.Duration, [][]float64, error) {
	rates := make([][]float64, len(variants))
	p50s := make([][]time.Duration, len(variants))
	cpus := make([][]float64, len(variants))
	for r := range b.o.rounds {
		for _, v := range rotate(len(variants), r) {
			pid, measured := pids[v]
			var before time.Duration
			if measured {
				var err error
				if before, err = procCPU(pid); err != nil {
					return nil, nil, nil, err
				}
			}
			start := time.Now()
			rate, p50, err := parallelRun(b.o.tputDur, c, variants[v])
			if err != nil {
				return nil, nil, nil, err
			}
			if measured {
				after, err := procCPU(pid)
				if err != nil {
					return nil, nil, nil, err
				}
				calls := rate * time.Since(start).Seconds()
				cpus[v] = append(cpus[v], us(after-before)/max(calls, 1))
			}
			rates[v] = append(rates[v], rate)
			p50s[v] = append(p50s[v], p50)
		}
	}
	return rates, p50s, cpus, nil
}

// throughputRowOf is the row of runVariants' measurements (fronts aside):
// medians of rounds, and mcpd − relay p50 as the median of each round's
// difference.
func throughputRowOf(server string, c int, rates [][]float64, p50s [][]time.Duration) throughputRow {
	var streamOverRelay, unaryOverRelay []float64
	for r := range p50s[tputRelay] {
		relay := us(p50s[tputRelay][r])
		streamOverRelay = append(streamOverRelay, us(p50s[tputMcpd][r])-relay)
		unaryOverRelay = append(unaryOverRelay, us(p50s[tputUnary][r])-relay)
	}
	row := throughputRow{Server: server, Concurrency: c,
		Direct: medianF(rates[tputDirect]), Mcpd: medianF(rates[tputMcpd]), Relay: medianF(rates[tputRelay]),
		McpdUnary: medianF(rates[tputUnary]),
		McpdP50:   us(medianDur(p50s[tputMcpd])), RelayP50: us(medianDur(p50s[tputRelay])),
		McpdUnaryP50:     us(medianDur(p50s[tputUnary])),
		McpdOverRelayP50: medianF(streamOverRelay), UnaryOverRelayP50: medianF(unaryOverRelay)}
	row.Ratio = ratio(row.Mcpd, row.Direct)
	row.RelayRatio = ratio(row.Relay, row.Direct)
	row.McpdOverRelay = ratio(row.Mcpd, row.Relay)
	row.UnaryOverRelay = ratio(row.McpdUnary, row.Relay)
	return row
}

// startup is section 7 and mcpd's idle footprint: a fresh mcpd with ten
// lazy servers, time to a health answer, its idle memory, then the first
// (lazy) call on a server against warm calls and against that server's
// direct spawn + handshake.
func (b *bench) startup(ctx context.Context) error {
	b.progress("startup and lazy first call")
	ts := b.targets()
	servers := map[string]serverConfig{}
	for _, t := range ts {
		servers[t.Name] = serverConfig{Command: t.Command, Args: t.Args}
	}
	for i := len(servers); i < idleServers; i++ {
		servers[fmt.Sprintf("demo%d", i)] = serverConfig{Command: b.o.demo, Args: []string{"--name", fmt.Sprintf("demo%d", i)}}
	}
	rounds := b.o.rounds
	var ready, idleRSS, idlePSS, idleAnon []float64
	first := make([][]float64, len(ts))
	warm := make([][]time.Duration, len(ts))
	cold := make([][]float64, len(ts))
	for range rounds {
		d, err := startDaemon(ctx, b.reg, b.o.mcpd, servers)
		if err != nil {
			return err
		}
		err = func() error {
			defer d.stop()
			ready = append(ready, ms(d.ready))
			if _, err := d.client().GetStatus(ctx, &mcpdv1.GetStatusRequest{}); err != nil {
				return fmt.Errorf("mcpd status: %w", err)
			}
			m, err := smapsRollup(d.pid())
			if err != nil {
				return err
			}
			idleRSS, idlePSS = append(idleRSS, float64(m.RSS)), append(idlePSS, float64(m.PSS))
			anon, err := statusField(d.pid(), "RssAnon")
			if err != nil {
				return err
			}
			idleAnon = append(idleAnon, float64(anon))
			for i, t := range ts {
				start := time.Now()
				if err := callEcho(ctx, d.client(), t.Name); err != nil {
					return err
				}
				first[i] = append(first[i], ms(time.Since(start)))
				if _, err := d.serverPid(ctx, t.Name); err != nil {
					return err
				}
				l, err := timeSequential(max(b.o.iters/10, 20), func() error { return callEcho(ctx, d.client(), t.Name) })
				if err != nil {
					return err
				}
				warm[i] = append(warm[i], l.quantile(0.5))
				dc, took, err := startDirect(ctx, b.reg, t)
				if err != nil {
					return err
				}
				dc.close()
				cold[i] = append(cold[i], ms(took))
			}
			return nil
		}()
		if err != nil {
			return err
		}
	}
	b.rep.Startup = startupRow{ReadyMs: medianF(ready), Servers: len(servers)}
	b.rep.Daemon.IdleRSS, b.rep.Daemon.IdlePSS = int64(medianF(idleRSS)), int64(medianF(idlePSS))
	b.rep.Daemon.IdleAnon = int64(medianF(idleAnon))
	b.rep.Daemon.IdleServers = len(servers)
	for i, t := range ts {
		b.rep.Lazy = append(b.rep.Lazy, lazyRow{
			Server:      t.Name,
			FirstCallMs: medianF(first[i]),
			WarmCallUs:  us(medianDur(warm[i])),
			DirectCold:  medianF(cold[i]),
		})
	}
	return nil
}

// describeMachine collects the machine description for BENCHMARKS.md.
func describeMachine(o *options) machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		line, _, _ := strings.Cut(string(b), "\n")
		m.MemTotal = strings.Join(strings.Fields(strings.TrimPrefix(line, "MemTotal:")), " ")
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		m.Load = strings.Join(strings.Fields(string(b))[:3], " ")
	}
	if !o.noNode {
		if out, err := exec.Command(o.node, "--version").Output(); err == nil {
			m.Node = strings.TrimSpace(string(out))
		}
	}
	return m
}
