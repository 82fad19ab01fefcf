// Command mcpd-bench measures mcpd side by side with the alternatives it
// replaces, in one run on one machine: every app talking to its own copy of
// an MCP server over stdio ("direct"), and a bare gRPC round trip on the
// same kind of socket. It reports call overhead, throughput, cached lists,
// memory, startup, notification fan-out and recovery after a crash, as
// medians of interleaved rounds and as ratios, because a shared machine is
// too noisy for absolute figures.
//
// It builds nothing: `make bench` builds bin/mcpd and bin/demo-server and
// runs it. It starts its own mcpd on a temporary socket with a temporary
// config, its own children, and checks at the end that every process it
// started is gone (killing any that is left, by pid, and failing).
//
// Usage:
//
//	mcpd-bench [-smoke] [-json] [-sections calls,throughput,...] [-mcpd bin/mcpd] [-mcpdctl bin/mcpdctl]
//	           [-demo-server bin/demo-server] [-httpface=false] [-bridge-profile DIR]
//	           [-mcpd-profile FILE] [-plots DIR] [-soak-duration 10m]
//
// The committed plots of the scale section are in docs/bench (plotsDir):
// "make bench-plots" writes them there.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

const usage = `mcpd-bench measures mcpd against direct stdio children and bare gRPC.

Usage:
  mcpd-bench [flags]

It starts its own mcpd (from -mcpd) on a temporary socket, the Go demo server
(-demo-server) and the npm server-everything (-everything, run with -node),
measures in interleaved rounds, prints one table (or JSON with -json), and
stops every process it started. -smoke is a CI-sized run (well under 2
minutes) that fails only when something does not work, never on a missed
target. Run it through "make bench" or "make bench-smoke".

Flags:
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "mcpd-bench: %v\n", err)
		os.Exit(1)
	}
}

// options are the command-line settings.
type options struct {
	mcpd       string
	mcpdctl    string // its bridge is the stdio front door
	demo       string
	node       string
	everything string
	smoke      bool
	json       bool
	headline   string // the file whose headline a full run rewrites; "" for none
	rounds     int
	iters      int
	tputDur    time.Duration
	memN       []int
	noNode     bool
	serveBare  string
	serveRelay string
	relayCmd   []string // the server command after -serve-relay's flags
	serveFloor string
	serveGRPC  string // -serve-grpc-stdio: mcpd's socket
	httpFace   bool   // start mcpd with --http-listen and measure its HTTP face
	// bridgeProfile is a directory for the bridge processes' CPU profiles.
	bridgeProfile string
	sections      map[string]bool // nil: every section
	// soakDur is the soak's length (default 10m, smoke 20s).
	soakDur time.Duration
	// mcpdProfile is a file for the main mcpd's CPU profile.
	mcpdProfile string
	// plots is the directory the scale section's SVG plots are written to.
	plots string
	// scale chooses the scale section's curves and points (scaleflags.go).
	scale scaleOptions
}

// sectionNames are the values of -sections, in the order they run.
var sectionNames = []string{"calls", "throughput", "lists", "cpu", "fanout", "recovery", "memory", "fleet", "startup", "scale", "soak", "trust"}

// runs reports whether section is to be measured. The soak is outside the
// default run's time budget: it runs when named, and in a smoke run (20 s).
func (o *options) runs(section string) bool {
	if section == "soak" && o.sections == nil {
		return o.smoke
	}
	return o.sections == nil || o.sections[section]
}

func parseOptions(args []string, stderr io.Writer) (*options, error) {
	var o options
	fs := flag.NewFlagSet("mcpd-bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mcpd, "mcpd", "bin/mcpd", "mcpd `binary` to benchmark")
	fs.StringVar(&o.mcpdctl, "mcpdctl", "bin/mcpdctl", "mcpdctl `binary` whose bridge is measured")
	fs.BoolVar(&o.httpFace, "httpface", true, "measure mcpd's HTTP face (starts mcpd with --http-listen 127.0.0.1:PORT, serving /servers/NAME/mcp); -httpface=false for an mcpd without it")
	fs.StringVar(&o.bridgeProfile, "bridge-profile", "", "write a CPU profile of each bridge process into `dir`")
	fs.DurationVar(&o.soakDur, "soak-duration", 0, "length of the soak section (default 10m, smoke 20s)")
	fs.StringVar(&o.mcpdProfile, "mcpd-profile", "", "write a CPU profile of the main mcpd (sections calls to fanout) to `file`")
	fs.StringVar(&o.plots, "plots", "", "write the scale section's SVG plots into `dir` (the committed ones: "+plotsDir+"; default: none)")
	fs.StringVar(&o.demo, "demo-server", "bin/demo-server", "Go demo MCP server `binary`")
	fs.StringVar(&o.node, "node", "node", "node `binary` for server-everything")
	fs.StringVar(&o.everything, "everything", "node_modules/@modelcontextprotocol/server-everything/dist/index.js",
		"server-everything entry `script`")
	fs.BoolVar(&o.noNode, "no-node", false, "skip the node server (when node or node_modules is missing)")
	fs.BoolVar(&o.smoke, "smoke", false, "CI-sized run: few iterations, small N; fails only on errors")
	fs.BoolVar(&o.json, "json", false, "print the report as JSON instead of a table")
	fs.StringVar(&o.headline, "headline", "", "after a full run (no -smoke, no -sections), rewrite the headline between the markers in `file` (make bench: BENCHMARKS.md)")
	fs.IntVar(&o.rounds, "rounds", 0, "interleaved `rounds` per comparison (default 5, smoke 2)")
	fs.IntVar(&o.iters, "iters", 0, "sequential calls per variant per round (default 2000, smoke 200)")
	fs.DurationVar(&o.tputDur, "throughput-duration", 0, "length of one throughput measurement (default 1s, smoke 150ms)")
	fs.StringVar(&o.serveBare, "serve-bare", "", "internal: serve the bare gRPC baseline on `socket`")
	fs.StringVar(&o.serveRelay, "serve-relay", "", "internal: serve the relay baseline on `socket` in front of the command after --")
	fs.StringVar(&o.serveFloor, "serve-http-floor", "", "internal: serve the HTTP floors on `addr` in front of the command after --")
	fs.StringVar(&o.serveGRPC, "serve-grpc-stdio", "", "internal: serve the gRPC client floor on stdio for mcpd at `socket`, for the server named after --")
	parseScale := scaleFlags(fs, &o.scale)
	sections := fs.String("sections", "", "comma-separated `list` of sections to run, of "+strings.Join(sectionNames, ",")+" (default all)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.serveRelay != "" || o.serveFloor != "" || o.serveGRPC != "" {
		o.relayCmd = fs.Args()
	} else if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (see mcpd-bench -help)", fs.Arg(0))
	}
	if err := parseScale(); err != nil {
		return nil, err
	}
	if o.headline != "" && (o.smoke || *sections != "") {
		return nil, errors.New("-headline needs a full run: without -smoke and -sections")
	}
	if *sections != "" {
		o.sections = map[string]bool{}
		for _, s := range strings.Split(*sections, ",") {
			if !slices.Contains(sectionNames, s) {
				return nil, fmt.Errorf("unknown section %q in -sections (want some of %s)", s, strings.Join(sectionNames, ","))
			}
			o.sections[s] = true
		}
	}
	def := func(v *int, full, smoke int) {
		if *v <= 0 {
			*v = full
			if o.smoke {
				*v = smoke
			}
		}
	}
	def(&o.rounds, 5, 2)
	def(&o.iters, 2000, 200)
	if o.tputDur <= 0 {
		o.tputDur = time.Second
		if o.smoke {
			o.tputDur = 150 * time.Millisecond
		}
	}
	o.memN = []int{1, 5, 10}
	if o.smoke {
		o.memN = []int{1, 2}
	}
	return &o, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	o, err := parseOptions(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	if o.serveBare != "" {
		return serveBare(o.serveBare)
	}
	if o.serveRelay != "" {
		return serveRelay(o.serveRelay, o.relayCmd)
	}
	if o.serveFloor != "" {
		return serveHTTPFloor(o.serveFloor, o.relayCmd)
	}
	if o.serveGRPC != "" {
		return serveGRPCStdio(o.serveGRPC, o.relayCmd)
	}
	if err := o.resolve(); err != nil {
		return err
	}
	if o.headline != "" {
		if err := checkHeadlineFile(o.headline); err != nil {
			return err
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	reg := &registry{}
	b := &bench{o: o, reg: reg, log: stderr}
	runErr := b.run(ctx)
	// Every process started must be gone, whatever happened.
	goneErr := reg.verifyGone()
	b.rep.Processes = processCheck{Started: reg.count(), LeftRunning: goneErr != nil}
	if runErr == nil || b.rep.complete {
		if o.json {
			enc := json.NewEncoder(stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(b.rep); err != nil {
				return err
			}
		} else {
			printReport(stdout, &b.rep)
		}
	}
	if o.headline != "" && runErr == nil && goneErr == nil && b.rep.complete {
		if err := writeHeadline(o.headline, renderHeadline(&b.rep, currentRun())); err != nil {
			return fmt.Errorf("-headline: %w", err)
		}
		fmt.Fprintf(stderr, "mcpd-bench: wrote the headline of %s\n", o.headline)
	}
	return errors.Join(runErr, goneErr)
}

// resolve makes the paths absolute and checks the binaries exist.
func (o *options) resolve() error {
	for _, p := range []*string{&o.mcpdProfile, &o.plots} {
		if *p != "" {
			abs, err := filepath.Abs(*p)
			if err != nil {
				return err
			}
			*p = abs
		}
	}
	for _, p := range []*string{&o.mcpd, &o.mcpdctl, &o.demo} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("%w (build it first: make build, or run make bench)", err)
		}
		*p = abs
	}
	if o.bridgeProfile != "" {
		abs, err := filepath.Abs(o.bridgeProfile)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(abs, 0o755); err != nil {
			return fmt.Errorf("profile directory: %w", err)
		}
		o.bridgeProfile = abs
	}
	if o.noNode {
		return nil
	}
	node, err := exec.LookPath(o.node)
	if err != nil {
		return fmt.Errorf("node not found (install node, or pass -no-node): %w", err)
	}
	o.node = node
	abs, err := filepath.Abs(o.everything)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("%w (run npm ci, or pass -no-node)", err)
	}
	o.everything = abs
	return nil
}
