package main

import (
	"context"

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
	view, err := c.parseViewArgs(cmd, args, "print JSON")
	if err != nil {
		return err
	}
	ctx, client, err := c.dial(ctx, view.timeout)
	if err != nil {
		return err
	}
	resp, err := client.ListServers(ctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		return c.rpcError(ctx, err, "")
	}
	switch {
	case view.asJSON:
		return writeJSON(c.stdout, struct {
			Servers []serverJSON `json:"servers"`
		}{toServersJSON(resp.GetServers())})
	case view.quiet:
		printNames(c.stdout, resp.GetServers())
	default:
		printServerTable(c.stdout, resp.GetServers())
	}
	return nil
}
