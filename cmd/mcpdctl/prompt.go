package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var promptCmd = &command{
	name:     "prompt",
	synopsis: "NAME PROMPT [key=value...] [--json]",
	short:    "get a prompt and print its messages",
	long: `Prompt arguments are strings: key=value passes value as it is. Each message
is printed as "role: text"; non-text content is summarized. --json prints the
result JSON as the server sent it.`,
	minArgs:  2,
	maxArgs:  -1,
	setup:    promptSetup,
	complete: completeServerThen(completePromptArg),
}

func promptSetup(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the result JSON as the server sent it")
	timeout := timeoutFlag(fs, 0)
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		return c.runPrompt(ctx, cmd, args, *asJSON, *timeout)
	}
}

func (c *cli) runPrompt(ctx context.Context, cmd *command, pos []string, asJSON bool, timeout time.Duration) error {
	server, prompt := pos[0], pos[1]
	// "prompts/get params {name, arguments?: {string: string}}"
	arguments, err := argumentsJSON(pos[2:], false)
	if err != nil {
		return &usageError{cmd: cmd, msg: err.Error()}
	}
	ctx, client, err := c.dial(ctx, timeout)
	if err != nil {
		return err
	}
	resp, err := client.GetPrompt(ctx, &mcpdv1.GetPromptRequest{
		Server: server, Name: prompt, ArgumentsJson: arguments, Options: c.callOptions(),
	})
	if err != nil {
		return c.rpcError(ctx, err, server)
	}
	if resp.GetError() != nil {
		if err := c.missingPrompt(ctx, server, prompt); err != nil {
			return err
		}
	}
	raw, err := c.rawResult(server, fmt.Sprintf("prompt %q", prompt), resp, asJSON)
	if err != nil || asJSON {
		return err
	}
	var res struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("server %s: bad prompt result: %s", server, jsonShape(err))
	}
	for _, m := range res.Messages {
		printText(c.stdout, dash(m.Role)+": "+renderContent(m.Content))
	}
	return nil
}
