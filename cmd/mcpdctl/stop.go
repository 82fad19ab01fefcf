package main

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var stopCmd = &command{
	name:     "stop",
	synopsis: "NAME [--json]",
	short:    "stop a server; it stays stopped until started again",
	minArgs:  1,
	maxArgs:  1,
	setup:    lifecycleSetup(runStop),
	complete: completeServerArg,
}

func runStop(ctx context.Context, client mcpdv1.McpdClient, name string) (*mcpdv1.ServerStatus, error) {
	resp, err := client.StopServer(ctx, &mcpdv1.StopServerRequest{Name: name})
	return resp.GetServer(), err
}
