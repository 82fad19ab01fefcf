// Command mcpdctl is the operator's CLI for mcpd: it shows the daemon's and
// the servers' status, starts and stops servers, and lists and calls the
// tools, prompts and resources of the supervised MCP servers, talking to mcpd
// over its gRPC socket (and, for "bridge", relaying a host's bytes to its
// bridge socket through internal/relay). This package holds the verbs,
// their flags and their output.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	os.Exit(runProcess(os.Args[1:]))
}

// runProcess runs mcpdctl as a process and returns its exit status. Ctrl-C
// (SIGINT) or SIGTERM cancels the verb's context, so that a call in flight
// is cancelled at the server before mcpdctl exits with 128+signal (130 for
// Ctrl-C); a second one ends mcpdctl at once.
func runProcess(args []string) int {
	ctx, stop := interruptible(context.Background())
	err := run(ctx, args, os.Stdout, os.Stderr)
	sig := stop()
	code := report(err, os.Stderr)
	if sig, ok := sig.(syscall.Signal); ok {
		return 128 + int(sig)
	}
	return code
}

// interruptible returns a context that ends at the first SIGINT or
// SIGTERM, and the function that stops watching for them and returns the
// signal that came, nil for none.
func interruptible(parent context.Context) (context.Context, func() os.Signal) {
	ctx, cancel := context.WithCancel(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	got := make(chan os.Signal, 1) // the signal that came, once
	go func() {                    // owned: stop waits for it
		defer close(got)
		select {
		case s := <-sigs:
			// The next one gets the default action: a cancelled call
			// that does not end can still be left at once.
			signal.Stop(sigs)
			cancel()
			got <- s
		case <-done:
		}
	}()
	return ctx, func() os.Signal {
		signal.Stop(sigs)
		close(done)
		cancel()
		return <-got
	}
}
