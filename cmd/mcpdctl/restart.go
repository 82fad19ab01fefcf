package main

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var restartCmd = &command{
	name:     "restart",
	synopsis: "NAME [--json]",
	short:    "stop a server if it runs and start it again",
	minArgs:  1,
	maxArgs:  1,
	setup:    lifecycleSetup(runRestart),
	complete: completeServerArg,
}

func runRestart(ctx context.Context, client mcpdv1.McpdClient, name string) (*mcpdv1.ServerStatus, error) {
	resp, err := client.RestartServer(ctx, &mcpdv1.RestartServerRequest{Name: name})
	return resp.GetServer(), err
}
