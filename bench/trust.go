package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
)

// The trust section: mcpd's CPU per tools/call (utime+stime of the mcpd
// process) with the audit log, a profile and pin "enforce" each on, all
// on, and all off, one mcpd per setup, measured alternately in rounds.

// trustVariant is one configuration of mcpd on the call path.
type trustVariant struct {
	name    string
	audit   bool   // the audit log on (the default)
	profile bool   // calls made under a profile that shows echo
	pin     string // the server's pin mode
}

var trustVariants = []trustVariant{
	{name: "all off", pin: "off"},
	{name: "audit", audit: true, pin: "off"},
	{name: "profile", profile: true, pin: "off"},
	{name: "pin enforce", pin: "enforce"},
	{name: "all on", audit: true, profile: true, pin: "enforce"},
}

// trustRow is one setup's CPU per call: the median over rounds, and the
// median of its per-round ratios to "all off" measured in the same round.
type trustRow struct {
	Setup string  `json:"setup"`
	Calls int     `json:"calls_per_round"`
	Mcpd  float64 `json:"mcpd_cpu_us_per_call"`
	Ratio float64 `json:"ratio_to_all_off"`
}

// trustCalls is how many calls each measurement makes: where mcpd's CPU
// clock cannot be read, /proc/PID/stat counts in 10 ms ticks, so a
// measurement must take well over a second of mcpd's CPU for the ratios
// to be good to a few percent.
func (b *bench) trustCalls() int {
	if b.o.smoke {
		return 300
	}
	return max(b.o.iters, 5000)
}

// trust runs the section on the Go demo server.
func (b *bench) trust(ctx context.Context) error {
	b.progress("trust: cpu per call with audit, profile, pin on and off")
	daemons := make([]*daemon, len(trustVariants))
	defer func() {
		for _, d := range daemons {
			if d != nil {
				d.stop()
			}
		}
	}()
	calls := make([]func() error, len(trustVariants))
	for i, s := range trustVariants {
		d, err := startTrustDaemon(ctx, b.reg, b.o.mcpd, b.o.demo, s)
		if err != nil {
			return fmt.Errorf("trust %s: %w", s.name, err)
		}
		daemons[i] = d
		cctx := ctx
		if s.profile {
			cctx = apiclient.Outgoing(ctx, apiclient.Metadata{Profile: "bench"})
		}
		client := d.client()
		calls[i] = func() error { return callEcho(cctx, client, "demo") }
		for range 50 { // starts the server, pins its tools, warms the path
			if err := calls[i](); err != nil {
				return fmt.Errorf("trust %s: %w\n%s", s.name, err, d.logTail())
			}
		}
	}
	n := b.trustCalls()
	perCall := make([][]float64, len(trustVariants))
	ratios := make([][]float64, len(trustVariants))
	for round := range b.o.rounds {
		got := make([]float64, len(trustVariants))
		for k := range trustVariants {
			i := (k + round) % len(trustVariants) // each setup goes first in turn
			_, m, err := cpuPerCall(n, 0, daemons[i].pid(), calls[i])
			if err != nil {
				return fmt.Errorf("trust %s: %w", trustVariants[i].name, err)
			}
			got[i] = float64(m.Nanoseconds()) / 1e3
		}
		for i := range trustVariants {
			perCall[i] = append(perCall[i], got[i])
			if got[0] > 0 {
				ratios[i] = append(ratios[i], got[i]/got[0])
			}
		}
	}
	for i, s := range trustVariants {
		row := trustRow{Setup: s.name, Calls: n, Mcpd: medianF(perCall[i]), Ratio: medianF(ratios[i])}
		b.rep.Trust = append(b.rep.Trust, row)
		if s.name == "audit" {
			b.rep.Targets = append(b.rep.Targets, targetCheck{Name: "mcpd CPU per call, audit on / off", Target: "<= 1.10",
				Value: row.Ratio, Unit: "x", Met: row.Ratio <= 1.10})
		}
	}
	return nil
}

// trustConfig is the config of setup s serving the demo server.
func trustConfig(demo string, s trustVariant) map[string]any {
	cfg := map[string]any{
		"mcpServers": map[string]any{"demo": map[string]any{"command": demo, "args": []string{"--name", "demo"}, "pin": s.pin}},
		"audit":      map[string]any{"enabled": s.audit},
	}
	if s.profile {
		cfg["profiles"] = map[string]any{"bench": map[string]any{
			"demo": map[string]any{"tools": map[string]any{"allow": []string{"echo", "add"}, "deny": []string{"slow*"}}},
		}}
	}
	return cfg
}

// startTrustDaemon starts mcpd for setup s with its own state directory
// (pins, audit log) in a fresh temporary directory.
func startTrustDaemon(ctx context.Context, reg *registry, mcpdBin, demo string, s trustVariant) (*daemon, error) {
	return startDaemonConfig(ctx, reg, mcpdBin, trustConfig(demo, s), daemonSettings{})
}

// printTrust prints the trust section of the table report.
func printTrust(w io.Writer, rows []trustRow) {
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(w, "trust: mcpd CPU per tools/call echo (utime+stime), gRPC, demo server, %d calls per setup per round\n", rows[0].Calls)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "setup\tmcpd µs/call\tvs all off\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%.1f\t%.3fx\t\n", r.Setup, r.Mcpd, r.Ratio)
	}
	tw.Flush()
	fmt.Fprintln(w)
}
