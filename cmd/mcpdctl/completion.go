package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var completionCmd = &command{
	name:     "completion",
	synopsis: "bash|zsh|fish",
	short:    "print the shell completion script for bash, zsh or fish",
	long: `Completes verbs, flags, and values from the running mcpd: server names, the
tools of the named server (and their argument names), prompt names and
resource URIs. When mcpd is not running, values are simply not offered.

Bash (needs the bash-completion package):
  source <(mcpdctl completion bash)                      # this shell
  mcpdctl completion bash > ~/.local/share/bash-completion/completions/mcpdctl

Zsh:
  source <(mcpdctl completion zsh)                       # this shell
  mcpdctl completion zsh > "${fpath[1]}/_mcpdctl"        # every new shell
  (compinit must run in ~/.zshrc: autoload -U compinit; compinit)

Fish:
  mcpdctl completion fish | source                       # this shell
  mcpdctl completion fish > ~/.config/fish/completions/mcpdctl.fish`,
	minArgs: 1,
	maxArgs: 1,
	setup: func(*pflag.FlagSet) runFunc {
		return func(_ context.Context, c *cli, cmd *command, args []string) error {
			return c.writeCompletion(cmd, args[0])
		}
	},
	complete: func(context.Context, *cli, []string) ([]string, cobra.ShellCompDirective) {
		return []string{"bash", "zsh", "fish"}, cobra.ShellCompDirectiveNoFileComp
	},
}

// writeCompletion prints the completion script of shell.
func (c *cli) writeCompletion(cmd *command, shell string) error {
	switch shell {
	case "bash":
		// Descriptions are for shells that show them beside the values.
		return c.root.GenBashCompletionV2(c.stdout, false)
	case "zsh":
		return c.root.GenZshCompletion(c.stdout)
	case "fish":
		return c.root.GenFishCompletion(c.stdout, true)
	}
	return &usageError{cmd: cmd, msg: fmt.Sprintf("unknown shell %q, want bash, zsh or fish", shell)}
}

// completionTimeout bounds the questions completion asks mcpd: a shell
// waits for them at every Tab.
const completionTimeout = time.Second

// completer offers values for the positional argument that follows args;
// ctx is bounded by completionTimeout. It offers nothing rather than fail.
type completer func(ctx context.Context, c *cli, args []string) ([]string, cobra.ShellCompDirective)

// completionFunc is the cobra completion of cmd's positional arguments.
func (c *cli) completionFunc(cmd *command) cobra.CompletionFunc {
	return func(cc *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if cmd.complete == nil || cmd.maxArgs >= 0 && len(args) >= cmd.maxArgs {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ctx := cc.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		ctx, cancel := context.WithTimeout(ctx, completionTimeout)
		defer cancel()
		values, directive := cmd.complete(ctx, c, args)
		var out []cobra.Completion
		for _, v := range values {
			if strings.HasPrefix(v, toComplete) {
				out = append(out, v)
			}
		}
		return out, directive
	}
}

// completeServerArg offers server names for the first argument.
func completeServerArg(ctx context.Context, c *cli, args []string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.serverNames(ctx), cobra.ShellCompDirectiveNoFileComp
}

// completeServers offers the server names not given yet, for every argument.
func completeServers(ctx context.Context, c *cli, args []string) ([]string, cobra.ShellCompDirective) {
	names := slices.DeleteFunc(c.serverNames(ctx), func(n string) bool { return slices.Contains(args, n) })
	return names, cobra.ShellCompDirectiveNoFileComp
}

// completeServerThen offers server names for the first argument and what
// second offers of that server after it.
func completeServerThen(second func(ctx context.Context, c *cli, server string, args []string) ([]string, cobra.ShellCompDirective)) completer {
	return func(ctx context.Context, c *cli, args []string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return c.serverNames(ctx), cobra.ShellCompDirectiveNoFileComp
		}
		return second(ctx, c, args[0], args[1:])
	}
}

// completeToolArgs offers the tools of server, then the argument names of the
// tool as "name=" (from its inputSchema) for the key=value arguments.
func completeToolArgs(ctx context.Context, c *cli, server string, args []string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return c.itemNames(ctx, "tools/list", server, "name"), cobra.ShellCompDirectiveNoFileComp
	}
	schema, err := c.toolSchema(ctx, server, args[0])
	if err != nil || schema == nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var keys []string
	for _, name := range schema.propertyNames() {
		if !slices.ContainsFunc(args[1:], func(a string) bool { return strings.HasPrefix(a, name+"=") }) {
			keys = append(keys, name+"=")
		}
	}
	return keys, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// completePromptArg offers the prompts of server, once.
func completePromptArg(ctx context.Context, c *cli, server string, args []string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.itemNames(ctx, "prompts/list", server, "name"), cobra.ShellCompDirectiveNoFileComp
}

// completeResourceArg offers the resource URIs of server, once.
func completeResourceArg(ctx context.Context, c *cli, server string, args []string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return c.itemNames(ctx, "resources/list", server, "uri"), cobra.ShellCompDirectiveNoFileComp
}

// completeCacheArg offers "clear", then a server name.
func completeCacheArg(ctx context.Context, c *cli, args []string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return []string{"clear"}, cobra.ShellCompDirectiveNoFileComp
	}
	return completeServerArg(ctx, c, args[1:])
}

// completeConfigArg offers the actions of config, then files.
func completeConfigArg(_ context.Context, _ *cli, args []string) ([]string, cobra.ShellCompDirective) {
	if len(args) == 0 {
		return []string{"check", "import"}, cobra.ShellCompDirectiveNoFileComp
	}
	return nil, cobra.ShellCompDirectiveDefault
}

// serverNames are the configured servers, none when mcpd cannot say.
func (c *cli) serverNames(ctx context.Context) []string {
	client, err := c.connect()
	if err != nil {
		return nil
	}
	resp, err := client.ListServers(ctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		return nil
	}
	var names []string
	for _, s := range sortedServers(resp.GetServers()) {
		names = append(names, s.GetName())
	}
	return names
}

// itemNames are the values of member key of the items server lists for
// method ("tools/list", ...), none when they cannot be had.
func (c *cli) itemNames(ctx context.Context, method, server, key string) []string {
	items, err := c.listItems(ctx, method, server)
	if err != nil {
		return nil
	}
	var names []string
	for _, raw := range items {
		var m map[string]json.RawMessage
		var v string
		if json.Unmarshal(raw, &m) == nil && json.Unmarshal(m[key], &v) == nil && v != "" {
			names = append(names, v)
		}
	}
	slices.Sort(names)
	return names
}

// listItems returns the items server lists for method, as mcpd has them
// (cached: asking is cheap).
func (c *cli) listItems(ctx context.Context, method, server string) ([]json.RawMessage, error) {
	client, err := c.connect()
	if err != nil {
		return nil, err
	}
	lists, err := listFrom(ctx, client, method, server, c.callOptions())
	if err != nil {
		return nil, err
	}
	if len(lists) != 1 {
		return nil, errors.New("not one list")
	}
	l := lists[0]
	if l.GetError() != nil || l.GetUnavailable() != "" {
		return nil, errors.New("list unavailable")
	}
	var items []json.RawMessage
	if err := json.Unmarshal([]byte(l.GetItemsJson()), &items); err != nil {
		return nil, err
	}
	return items, nil
}
