// Command mcpdctl is the operator's CLI for mcpd: it shows the daemon's and
// the servers' status, starts and stops servers, and lists and calls the
// tools, prompts and resources of the supervised MCP servers, talking to mcpd
// only over its gRPC socket.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(report(err, os.Stderr))
}
