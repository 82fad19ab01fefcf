package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var versionCmd = &command{
	name:  "version",
	short: "print mcpdctl's version and the running mcpd's",
	long: `Prints mcpdctl's own version, then the version of the mcpd that answers on
the socket, or why none does. Exit status 0 either way: mcpdctl's version
is always known.`,
	setup: func(fs *pflag.FlagSet) runFunc {
		timeout := timeoutFlag(fs, 3*time.Second)
		return func(ctx context.Context, c *cli, _ *command, _ []string) error {
			return c.runVersion(ctx, *timeout)
		}
	},
}

func (c *cli) runVersion(ctx context.Context, timeout time.Duration) error {
	fmt.Fprintf(c.stdout, "mcpdctl %s\n", version.Version)
	fmt.Fprintln(c.stdout, c.daemonVersion(ctx, timeout))
	return nil
}

// daemonVersion is the line about the running mcpd: its version, or why
// it has none to tell.
func (c *cli) daemonVersion(ctx context.Context, timeout time.Duration) string {
	ctx, client, err := c.dial(ctx, timeout)
	if err == nil {
		var st *mcpdv1.GetStatusResponse
		st, err = client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
		if err == nil {
			return fmt.Sprintf("mcpd %s (pid %d, socket %s)", dash(st.GetVersion()), st.GetPid(), sanitize(c.socket))
		}
		err = c.rpcError(ctx, err, "")
	}
	return sanitizeText(err.Error())
}
