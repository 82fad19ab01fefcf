package main

import (
	"context"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var startCmd = &command{
	name:     "start",
	synopsis: "NAME [--json]",
	short:    "start a server (also clears a crash loop or an explicit stop)",
	minArgs:  1,
	maxArgs:  1,
	setup:    lifecycleSetup(runStart),
	complete: completeServerArg,
}

func runStart(ctx context.Context, client mcpdv1.McpdClient, name string) (*mcpdv1.ServerStatus, error) {
	resp, err := client.StartServer(ctx, &mcpdv1.StartServerRequest{Name: name})
	return resp.GetServer(), err
}
