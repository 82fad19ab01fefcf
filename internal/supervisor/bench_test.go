package supervisor

import (
	"context"
	"fmt"
	"io"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// daemonLogger is a logger built as mcpd builds its own (cmd/mcpd): JSON
// and console cores teed, at level, writing nowhere.
func daemonLogger(level zapcore.Level) *zap.Logger {
	json := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(io.Discard), level)
	console := zapcore.NewCore(zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig()), zapcore.AddSync(io.Discard), level)
	return zap.New(zapcore.NewTee(json, console))
}

// lazySpecs are n lazy servers, as the scale benchmark configures them.
func lazySpecs(n int) []Spec {
	specs := make([]Spec, n)
	for i := range specs {
		name := fmt.Sprintf("demo%03d", i)
		specs[i] = Spec{Name: name, Command: "/bin/true", Args: []string{"--name", name},
			Protocol: "auto", Restart: RestartOnFailure, ShutdownGrace: DefaultBackoffMax, DiscoverTimeout: DefaultBackoffMax}
	}
	return specs
}

// BenchmarkNew500 is the start-up's supervisor work at 500 lazy servers:
// New, then Run until every server's status is readable, then the stop.
func BenchmarkNew500(b *testing.B) {
	specs := lazySpecs(500)
	log := daemonLogger(zapcore.InfoLevel)
	b.ReportAllocs()
	for b.Loop() {
		s := New(Options{Specs: specs, Logger: log})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- s.Run(ctx) }()
		if st := s.Status(); len(st) != 500 {
			b.Fatalf("%d servers", len(st))
		}
		cancel()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkApplyOne500 is a reload of 500 lazy servers that changes one
// server's args.
func BenchmarkApplyOne500(b *testing.B) {
	specs := lazySpecs(500)
	s := New(Options{Specs: specs, Logger: daemonLogger(zapcore.InfoLevel)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		next := append([]Spec(nil), specs...)
		next[0].Args = []string{"--name", fmt.Sprint("changed", i)}
		res, err := s.Apply(next)
		if err != nil || len(res.Restarted) != 1 || len(res.Unchanged) != 499 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
}
