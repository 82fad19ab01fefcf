package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// lifecycleRPC asks mcpd to start, stop or restart the server name.
type lifecycleRPC func(ctx context.Context, client mcpdv1.McpdClient, name string) (*mcpdv1.ServerStatus, error)

// lifecycleSetup is the shared setup of start, stop and restart: NAME, one
// RPC, then the server's new state.
func lifecycleSetup(rpc lifecycleRPC) func(fs *pflag.FlagSet) runFunc {
	return func(fs *pflag.FlagSet) runFunc {
		asJSON := fs.Bool("json", false, "print the server's status as JSON")
		timeout := timeoutFlag(fs, 60*time.Second)
		return func(ctx context.Context, c *cli, _ *command, args []string) error {
			return c.runLifecycle(ctx, rpc, args[0], *asJSON, *timeout)
		}
	}
}

// runLifecycle sends rpc for the server name and prints its new state.
func (c *cli) runLifecycle(ctx context.Context, rpc lifecycleRPC, name string, asJSON bool, timeout time.Duration) error {
	ctx, client, err := c.dial(ctx, timeout)
	if err != nil {
		return err
	}
	s, err := rpc(ctx, client, name)
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	if asJSON {
		return writeJSON(c.stdout, toServerJSON(s))
	}
	line := fmt.Sprintf("%s: %s", dash(s.GetName()), stateName(s.GetState()))
	if s.GetPid() != 0 {
		line += fmt.Sprintf(", pid %d", s.GetPid())
	}
	if p := protocolCell(s); p != "-" && s.GetPid() != 0 {
		line += ", " + p
	}
	if e := lastErrorCell(s); e != "" && s.GetState() != mcpdv1.ServerState_SERVER_STATE_READY {
		line += ", last error: " + e
	}
	fmt.Fprintln(c.stdout, line)
	return nil
}
