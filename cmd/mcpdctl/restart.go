package main

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var restartCmd = &command{
	name:     "restart",
	synopsis: "NAME [--json]",
	short:    "stop a server if it runs and start it again",
	run:      runRestart,
}

func runRestart(ctx context.Context, c *cli, cmd *command, args []string) error {
	return runLifecycle(ctx, c, cmd, args, func(ctx context.Context, client mcpdv1.McpdClient, name string) (*mcpdv1.ServerStatus, error) {
		resp, err := client.RestartServer(ctx, &mcpdv1.RestartServerRequest{Name: name})
		return resp.GetServer(), err
	})
}
