package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var readCmd = &command{
	name:     "read",
	synopsis: "NAME URI [--json]",
	short:    "read a resource and print its contents",
	long: `Text contents are printed as they are; binary contents are summarized as
<blob MIME N bytes>. --json prints the result JSON as the server sent it.`,
	minArgs:  2,
	maxArgs:  2,
	setup:    readSetup,
	complete: completeServerThen(completeResourceArg),
}

func readSetup(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the result JSON as the server sent it")
	timeout := timeoutFlag(fs, 0)
	return func(ctx context.Context, c *cli, _ *command, args []string) error {
		return c.runRead(ctx, args[0], args[1], *asJSON, *timeout)
	}
}

func (c *cli) runRead(ctx context.Context, server, uri string, asJSON bool, timeout time.Duration) error {
	ctx, client, err := c.dial(ctx, timeout)
	if err != nil {
		return err
	}
	resp, err := client.ReadResource(ctx, &mcpdv1.ReadResourceRequest{Server: server, Uri: uri, Options: c.callOptions()})
	if err != nil {
		return c.rpcError(ctx, err, server)
	}
	raw, err := c.rawResult(server, fmt.Sprintf("resource %q", uri), resp, asJSON)
	if err != nil || asJSON {
		return err
	}
	var res struct {
		Contents []struct {
			URI      string  `json:"uri"`
			MimeType string  `json:"mimeType"`
			Text     *string `json:"text"`
			Blob     *string `json:"blob"`
		} `json:"contents"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("server %s: bad read result: %s", server, jsonShape(err))
	}
	for _, ct := range res.Contents {
		switch {
		case ct.Text != nil:
			printText(c.stdout, *ct.Text)
		case ct.Blob != nil:
			fmt.Fprintln(c.stdout, sanitize(blobSummary(ct.MimeType, *ct.Blob)))
		default:
			fmt.Fprintf(c.stdout, "<empty contents of %s>\n", sanitize(ct.URI))
		}
	}
	return nil
}
