package main

import (
	"context"
	"fmt"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// runLifecycle is the shared body of start, stop and restart: parse NAME,
// send one RPC, print the server's new state.
func runLifecycle(ctx context.Context, c *cli, cmd *command, args []string,
	rpc func(ctx context.Context, client mcpdv1.McpdClient, name string) (*mcpdv1.ServerStatus, error)) error {
	fs := c.flags(cmd)
	asJSON := fs.Bool("json", false, "print the server's status as JSON")
	timeout := timeoutFlag(fs, 60*time.Second)
	pos, err := c.parseArgs(cmd, fs, args, 1, 1)
	if err != nil {
		return err
	}
	name := pos[0]
	ctx, client, err := c.dial(ctx, *timeout)
	if err != nil {
		return err
	}
	s, err := rpc(ctx, client, name)
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	if *asJSON {
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
