package main

import (
	"context"
	"os"
	"runtime"

	"github.com/oklog/run"

	"github.com/mcpd-dev/mcpd/internal/gomaxprocs"
)

// newGovernor returns what sets the threads running mcpd's Go code
// (GOMAXPROCS) from --procs (internal/gomaxprocs):
//   - n > 0 fixes n;
//   - 0 with $GOMAXPROCS set keeps what Go took from it;
//   - otherwise the count moves between half of Go's default at start (at
//     least one) while calls come one at a time, and all of it while an
//     event goes to many apps or many calls in flight keep the low threads
//     at least half busy. Go's default follows the cgroup's CPU limit at
//     start; setting GOMAXPROCS ends Go's own updates, so a later change
//     of the limit is not followed.
func newGovernor(n int) *gomaxprocs.Governor {
	switch {
	case n > 0:
		return gomaxprocs.New(n, n)
	case os.Getenv("GOMAXPROCS") != "":
		n = runtime.GOMAXPROCS(0)
		return gomaxprocs.New(n, n)
	}
	all := runtime.GOMAXPROCS(0)
	return gomaxprocs.New(all/2, all)
}

// addGovernorActor runs gov until mcpd stops.
func addGovernorActor(g *run.Group, gov *gomaxprocs.Governor) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	g.Add(func() error {
		defer close(done)
		gov.Run(ctx) // returns at once when the count is fixed
		<-ctx.Done()
		return nil
	}, func(error) {
		cancel()
		<-done
	})
}
