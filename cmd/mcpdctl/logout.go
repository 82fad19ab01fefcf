package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var logoutCmd = &command{
	name:     "logout",
	synopsis: "NAME",
	short:    "forget a remote server's OAuth token; calls to it need a login again",
	minArgs:  1,
	maxArgs:  1,
	setup:    logoutSetup,
	complete: completeServerArg,
}

func logoutSetup(fs *pflag.FlagSet) runFunc {
	timeout := timeoutFlag(fs, 60*time.Second)
	return func(ctx context.Context, c *cli, _ *command, args []string) error {
		ctx, client, err := c.dial(ctx, *timeout)
		if err != nil {
			return err
		}
		resp, err := client.Logout(ctx, &mcpdv1.LogoutRequest{Name: args[0]})
		if err != nil {
			return c.rpcError(ctx, err, args[0])
		}
		if resp.GetWasLoggedIn() {
			fmt.Fprintf(c.stdout, "logged out of %s\n", args[0])
		} else {
			fmt.Fprintf(c.stdout, "%s had no login\n", args[0])
		}
		return nil
	}
}
