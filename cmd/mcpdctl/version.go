package main

import (
	"context"
	"fmt"

	"github.com/mcpd-dev/mcpd/internal/version"
)

var versionCmd = &command{
	name:  "version",
	short: "print mcpdctl's version",
	run:   runVersion,
}

func runVersion(_ context.Context, c *cli, cmd *command, args []string) error {
	fs := c.flags(cmd)
	if _, err := c.parseArgs(cmd, fs, args, 0, 0); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "mcpdctl %s\n", version.Version)
	return nil
}
