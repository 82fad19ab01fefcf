package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// perform does what scenario asks of a client, through mcpd.
func (d *driver) perform(ctx context.Context, scenario string, sctx map[string]any) error {
	if strings.HasPrefix(scenario, "auth/") {
		return d.authScenario(ctx)
	}
	opts := &mcp.ClientOptions{}
	switch scenario {
	case "elicitation-sep1034-client-defaults":
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}
	case "sep-2322-client-request-state":
		opts.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{}}
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"confirmed": true}}, nil
		}
	}
	cs, err := d.host(ctx, opts)
	if err != nil {
		return err
	}
	defer cs.Close()
	return hostScenario(ctx, cs, scenario, sctx)
}

// host connects the Go SDK's client, as the MCP host, to "mcpdctl bridge".
func (d *driver) host(ctx context.Context, opts *mcp.ClientOptions) (*mcp.ClientSession, error) {
	cmd := exec.Command(d.ctl, "--socket", d.socket, "bridge", driverServer)
	cmd.Env = driverEnv()
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "mcpd-conformance-host", Version: "1.0.0"}, opts)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return nil, fmt.Errorf("connect to mcpdctl bridge: %w", err)
	}
	return cs, nil
}

// hostScenario is the host's part of each non-auth scenario: the calls a
// client makes, as the Go SDK's conformance client makes them.
func hostScenario(ctx context.Context, cs *mcp.ClientSession, scenario string, sctx map[string]any) error {
	call := func(name string, args map[string]any) error {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", name, err)
		}
		return nil
	}
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		return fmt.Errorf("tools/list: %w", err)
	}
	switch scenario {
	case "initialize", "request-metadata", "json-schema-ref-no-deref":
		return nil
	case "tools_call":
		return call("add_numbers", map[string]any{"a": 5, "b": 3})
	case "elicitation-sep1034-client-defaults":
		return call("test_client_elicitation_defaults", map[string]any{})
	case "sse-retry":
		return call("test_reconnection", map[string]any{})
	case "json-schema-2020-12-preservation":
		i := slices.IndexFunc(tools.Tools, func(t *mcp.Tool) bool { return t.Name == "json_schema_2020_12_tool" })
		if i < 0 {
			return fmt.Errorf("tool json_schema_2020_12_tool not listed")
		}
		return call("json_schema_echo", map[string]any{"schema": tools.Tools[i].InputSchema})
	case "sep-2322-client-request-state":
		for _, name := range []string{"test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated", "test_mrtr_no_result_type"} {
			if err := call(name, map[string]any{}); err != nil {
				fmt.Fprintf(os.Stderr, "driver: %v (some are meant to fail)\n", err)
			}
		}
		return nil
	case "http-standard-headers":
		return standardHeaders(ctx, cs, tools)
	case "http-custom-headers":
		for _, c := range toolCalls(sctx) {
			if err := call(c.name, c.args); err != nil {
				fmt.Fprintf(os.Stderr, "driver: %v\n", err)
			}
		}
		return nil
	case "http-invalid-tool-headers":
		for _, t := range tools.Tools {
			if err := call(t.Name, map[string]any{"region": "us-west1"}); err != nil {
				fmt.Fprintf(os.Stderr, "driver: %v\n", err)
			}
		}
		return nil
	}
	return fmt.Errorf("unknown scenario %q", scenario)
}

// standardHeaders uses a tool, a resource and a prompt once each.
func standardHeaders(ctx context.Context, cs *mcp.ClientSession, tools *mcp.ListToolsResult) error {
	if len(tools.Tools) > 0 {
		_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{}})
	}
	if res, err := cs.ListResources(ctx, nil); err == nil && len(res.Resources) > 0 {
		_, _ = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: res.Resources[0].URI})
	}
	if ps, err := cs.ListPrompts(ctx, nil); err == nil && len(ps.Prompts) > 0 {
		_, _ = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: ps.Prompts[0].Name, Arguments: map[string]string{}})
	}
	return nil
}

type toolCall struct {
	name string
	args map[string]any
}

// toolCalls reads the scenario context's "toolCalls": [{"name", "arguments"}].
func toolCalls(sctx map[string]any) []toolCall {
	raw, _ := sctx["toolCalls"].([]any)
	var out []toolCall
	for _, item := range raw {
		obj, _ := item.(map[string]any)
		name, _ := obj["name"].(string)
		args, _ := obj["arguments"].(map[string]any)
		if args == nil {
			args = map[string]any{}
		}
		out = append(out, toolCall{name: name, args: args})
	}
	return out
}
