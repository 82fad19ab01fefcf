package main

import (
	"context"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var serversCmd = &command{
	name:     "servers",
	synopsis: "[--json] [-q]",
	short:    "list the configured servers and their state",
	long: `Like status without the daemon line. --json prints {"servers": [...]} in
the shape of status --json; -q prints the names only.`,
	setup: func(fs *pflag.FlagSet) runFunc {
		view := viewFlags(fs, "print JSON")
		return func(ctx context.Context, c *cli, _ *command, _ []string) error { return runServers(ctx, c, *view) }
	},
}

func runServers(ctx context.Context, c *cli, view viewArgs) error {
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
