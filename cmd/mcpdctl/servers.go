package main

import (
	"context"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var serversCmd = &command{
	name:     "servers",
	synopsis: "[--json] [-q]",
	short:    "list the configured servers and their state",
	long: `Like status without the daemon line. --json prints {"servers": [...]} in
the shape of status --json; -q prints the names only.`,
	run: runServers,
}

func runServers(ctx context.Context, c *cli, cmd *command, args []string) error {
	fs := c.flags(cmd)
	asJSON := fs.Bool("json", false, "print JSON")
	quiet := fs.Bool("q", false, "print server names only")
	timeout := timeoutFlag(fs, 10*time.Second)
	if _, err := c.parseArgs(cmd, fs, args, 0, 0); err != nil {
		return err
	}
	ctx, client, err := c.dial(ctx, *timeout)
	if err != nil {
		return err
	}
	resp, err := client.ListServers(ctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		return c.rpcError(ctx, err, "")
	}
	switch {
	case *asJSON:
		return writeJSON(c.stdout, struct {
			Servers []serverJSON `json:"servers"`
		}{toServersJSON(resp.GetServers())})
	case *quiet:
		printNames(c.stdout, resp.GetServers())
	default:
		printServerTable(c.stdout, resp.GetServers())
	}
	return nil
}
