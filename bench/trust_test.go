package main

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/audit"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/pin"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/tracing"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The cost of pinning, the audit log and tracing on the call path, side by
// side with them off (BENCHMARKS.md):
//
//	go test ./bench -run '^$' -bench HotPathTrust -benchtime 3000x -count 5
//
// cpu-ns/op is the CPU time of this process (the app's gRPC client and
// mcpd) per call, from getrusage; the fake child's CPU is not in it.

// trustSetup is one configuration of the benchmark.
type trustSetup struct {
	name  string
	pin   string // "" off
	audit bool
	trace bool
}

func inProcessTrust(tb testing.TB, ts trustSetup) mcpdv1.McpdClient {
	tb.Helper()
	cmd, args := fakemcp.Command()
	dir := tb.TempDir()
	sopts := supervisor.Options{
		Specs:  []supervisor.Spec{{Name: "fake", Command: cmd, Args: args, Env: fakeEnv("legacy,quiet"), Pin: ts.pin}},
		Logger: zap.NewNop(),
	}
	if ts.pin != "" {
		sopts.Pins = pin.NewBook(pin.NewStore(filepath.Join(dir, "pins")))
	}
	aopts := core.Options{Logger: zap.NewNop()}
	if ts.audit {
		l, err := audit.Open(filepath.Join(dir, audit.FileName), audit.Options{MaxSize: 1 << 30})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(func() { l.Close() })
		aopts.Audit = core.AuditOptions{Log: l}
	}
	if ts.trace {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
		tb.Cleanup(func() { tp.Shutdown(context.Background()) })
		tr := tracing.New(tp)
		sopts.Upstream = tr.Upstream
		aopts.Tracer = tr
	}
	sup := supervisor.New(sopts)
	path := filepath.Join(dir, "s", "mcpd.sock")
	ln, err := socket.Listen(path)
	if err != nil {
		tb.Fatal(err)
	}
	aopts.SocketPath = path
	gs := api.NewGRPCServer(core.New(sup, aopts), zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Run(ctx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- gs.Serve(ln) }()
	conn, err := dialApp(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		_ = conn.Close()
		gs.Stop()
		<-serveDone
		cancel()
		<-supDone
	})
	return mcpdv1.NewMcpdClient(conn)
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func BenchmarkHotPathTrust(b *testing.B) {
	for _, ts := range []trustSetup{
		{name: "off"},
		{name: "pin-warn", pin: "warn"},
		{name: "pin-enforce", pin: "enforce"},
		{name: "audit", audit: true},
		{name: "pin-enforce+audit", pin: "enforce", audit: true},
		{name: "trace", trace: true},
	} {
		b.Run(ts.name, func(b *testing.B) {
			c := inProcessTrust(b, ts)
			ctx := context.Background()
			if _, err := c.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: "fake"}); err != nil {
				b.Fatal(err)
			}
			if err := callEcho(ctx, c, "fake"); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := cpuTime()
			for b.Loop() {
				if err := callEcho(ctx, c, "fake"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}
