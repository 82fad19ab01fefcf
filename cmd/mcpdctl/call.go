package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var callCmd = &command{
	name:     "call",
	synopsis: "NAME TOOL [JSON | key=value...] [--json]",
	short:    "call a tool and print its result",
	long: `The arguments are either one JSON object, or key=value pairs. A value takes
the type the tool's inputSchema gives its property: message=123 stays a
string for a string, n=5 is a number for a number or an integer, and
booleans, arrays and objects are JSON (on=true, opts={"a":1}); a value that
cannot be that type is a usage error. A property without a type, or a tool
without a schema, takes JSON when the value parses as JSON, else the string
(city=Paris); so does every value when the tools list that gives the schema
is not answered within 3s. Text content is printed; other content is
summarized. Progress goes to stderr. --json prints the result JSON as the
server sent it. Exits 1 when the tool reports an error (isError) or the
server answers with an MCP error; either says so when the server does not
list the tool, with the closest name it lists.`,
	minArgs:  2,
	maxArgs:  -1,
	setup:    callSetup,
	complete: completeServerThen(completeToolArgs),
}

// progressToken is the token mcpdctl asks progress for; mcpd maps it to a
// token unique on the child and back.
const progressToken = "mcpdctl"

// toolResult holds the members of a CallToolResult that mcpdctl prints.
type toolResult struct {
	Content           []json.RawMessage `json:"content"`
	StructuredContent json.RawMessage   `json:"structuredContent"`
	IsError           bool              `json:"isError"`
}

func callSetup(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the result JSON as the server sent it")
	timeout := timeoutFlag(fs, 0)
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		return c.runCall(ctx, cmd, args, *asJSON, *timeout)
	}
}

func (c *cli) runCall(ctx context.Context, cmd *command, pos []string, asJSON bool, timeout time.Duration) error {
	server, tool := pos[0], pos[1]
	arguments, err := argumentsJSON(pos[2:], true)
	if err != nil {
		return &usageError{cmd: cmd, msg: err.Error()}
	}
	ctx, client, err := c.dial(ctx, timeout)
	if err != nil {
		return err
	}
	if arguments, err = c.typedArguments(ctx, cmd, server, tool, pos[2:], arguments); err != nil {
		return err
	}
	stream, err := client.CallTool(ctx, &mcpdv1.CallToolRequest{
		Server:        server,
		Tool:          tool,
		ArgumentsJson: arguments,
		// "Opt-in: params._meta.progressToken (string or int, unique
		// among the sender's active requests)."
		MetaJson: `{"progressToken":"` + progressToken + `"}`,
		Options:  c.callOptions(),
	})
	if err != nil {
		return c.rpcError(ctx, err, server)
	}
	var resp *mcpdv1.McpResponse
	for resp == nil {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return errors.New("mcpd ended the call without a response")
		}
		if err != nil {
			return c.rpcError(ctx, err, server)
		}
		switch e := ev.GetEvent().(type) {
		case *mcpdv1.CallToolEvent_ProgressJson:
			c.printProgress(e.ProgressJson)
		case *mcpdv1.CallToolEvent_MessageJson:
			c.printLogMessage(e.MessageJson)
		case *mcpdv1.CallToolEvent_Response:
			resp = e.Response
		}
	}
	return c.callResult(ctx, client, server, tool, resp, asJSON)
}

// callResult prints the answer to a call of tool on server and fails the
// command for an MCP error or an isError result, saying which: a tool the
// server does not list is "not found" (after an isError result, beside it).
func (c *cli) callResult(ctx context.Context, client mcpdv1.McpdClient, server, tool string, resp *mcpdv1.McpResponse, asJSON bool) error {
	what := fmt.Sprintf("tool %q", tool)
	if resp.GetError() != nil {
		if err := c.missingTool(ctx, client, server, tool); err != nil {
			return err
		}
	}
	raw, kind, err := resultOf(server, what, resp)
	if err != nil {
		return err
	}
	var res toolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return fmt.Errorf("server %q: %s: bad tool result: %s", server, what, jsonShape(err))
	}
	if err := c.echoResult(asJSON, raw, kind, server, what); err != nil {
		return err
	}
	if !asJSON {
		c.printToolResult(res)
	}
	if !res.IsError {
		return nil
	}
	// Some servers answer a tool they do not have with an isError
	// result: the server's list says whether it has the tool, not the
	// result's text. The tool's own error stands beside it (a server may
	// run a tool it does not list), and a slow list does not hold it up.
	lctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	missing := c.missingTool(lctx, client, server, tool)
	cancel()
	if missing != nil {
		return fmt.Errorf("server %q: %s reported an error (isError); %w", server, what, missing)
	}
	// "Tool-execution failures come back as isError: true results."
	return fmt.Errorf("server %q: %s reported an error (isError)", server, what)
}

// schemaTimeout bounds the tools/list that types a call's key=value
// arguments; without it they are typed as JSON or strings.
const schemaTimeout = 3 * time.Second

// typedArguments returns the arguments of a call of tool given as key=value
// pairs typed by the tool's inputSchema (see typedKeyValues); inferred, the
// arguments as they are, when they are one JSON object or the tool's
// schema cannot be had.
func (c *cli) typedArguments(ctx context.Context, cmd *command, server, tool string, args []string, inferred string) (string, error) {
	if len(args) == 0 || strings.HasPrefix(strings.TrimSpace(args[0]), "{") {
		return inferred, nil
	}
	// The schema only types the values: a server slow to list does not
	// hold the call up for its own timeout first.
	lctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	schema, err := c.toolSchema(lctx, server, tool)
	cancel()
	if err != nil || schema == nil {
		return inferred, nil
	}
	typed, err := typedKeyValues(args, schema)
	if err != nil {
		return "", &usageError{cmd: cmd, msg: fmt.Sprintf("tool %q of server %q: %v", tool, server, err)}
	}
	return typed, nil
}

// argumentsJSON builds the arguments object of a tool call (jsonValues) or
// a prompt from the command line: "" for none, else key=value pairs (see
// parseKeyValues). A tool's arguments may also be one JSON object.
func argumentsJSON(args []string, jsonValues bool) (string, error) {
	if len(args) == 0 {
		return "", nil
	}
	if jsonValues && strings.HasPrefix(strings.TrimSpace(args[0]), "{") {
		if len(args) > 1 {
			return "", errors.New("give the arguments either as one JSON object or as key=value pairs")
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(args[0]), &obj); err != nil {
			return "", fmt.Errorf("arguments are not a JSON object: %w", err)
		}
		return args[0], nil
	}
	return parseKeyValues(args, jsonValues)
}

func (c *cli) printToolResult(res toolResult) {
	printed := false
	for _, block := range res.Content {
		printText(c.stdout, renderContent(block))
		printed = true
	}
	if !printed && len(res.StructuredContent) > 0 && string(res.StructuredContent) != "null" {
		// A result with only structured content: show that, sanitized
		// like any text (JSON strings may hold DEL and C1 controls raw).
		var b strings.Builder
		writeJSON(&b, res.StructuredContent)
		printText(c.stdout, b.String())
	}
}

// printProgress prints the params of a notifications/progress as
// "progress: 3/10 message" on stderr.
func (c *cli) printProgress(params string) {
	var p struct {
		Progress json.Number `json:"progress"`
		Total    json.Number `json:"total"`
		Message  string      `json:"message"`
	}
	if err := json.Unmarshal([]byte(params), &p); err != nil {
		c.warnf("bad progress notification: %v", err)
		return
	}
	line := "progress: " + p.Progress.String()
	if p.Total != "" {
		line += "/" + p.Total.String()
	}
	if p.Message != "" {
		line += " " + p.Message
	}
	fmt.Fprintln(c.stderr, sanitize(line))
}

// printLogMessage prints the params of a notifications/message sent for
// this call as "log: level: [logger: ]data" on stderr.
func (c *cli) printLogMessage(params string) {
	var m struct {
		Level  string          `json:"level"`
		Logger string          `json:"logger"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal([]byte(params), &m); err != nil {
		c.warnf("bad log notification: %v", err)
		return
	}
	var data string
	if err := json.Unmarshal(m.Data, &data); err != nil {
		data = string(m.Data) // not a string: show the JSON
	}
	line := "log: " + dash(m.Level) + ": "
	if m.Logger != "" {
		line += m.Logger + ": "
	}
	fmt.Fprintln(c.stderr, sanitizeText(line+data))
}
