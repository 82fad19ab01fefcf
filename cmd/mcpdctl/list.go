package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"sort"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// listCommand is an aggregate list verb (tools, prompts, resources) after
// its "[NAME] [--json]" command line was parsed and mcpd dialed.
type listCommand struct {
	c      *cli
	client mcpdv1.McpdClient
	server string // NAME, empty for every server
	asJSON bool
	warned map[string]bool // servers already warned about, see gather
}

// listArgs is the command line of an aggregate list verb: [NAME] [--json].
type listArgs struct {
	server  string
	asJSON  bool
	timeout time.Duration
	profile string // --profile: list as a host under it sees
}

// listSetup declares the flags of an aggregate list verb (jsonUsage says
// what --json prints) and returns the verb that runs list with them.
func listSetup(jsonUsage string, list func(ctx context.Context, c *cli, a listArgs) error) func(fs *pflag.FlagSet) runFunc {
	return func(fs *pflag.FlagSet) runFunc {
		var a listArgs
		fs.BoolVar(&a.asJSON, "json", false, jsonUsage)
		fs.DurationVar(&a.timeout, "timeout", 0, "give up after this long; 0 means no limit")
		fs.StringVar(&a.profile, "profile", "", "list what a host under this profile of the config sees")
		return func(ctx context.Context, c *cli, _ *command, args []string) error {
			if len(args) == 1 {
				a.server = args[0]
			}
			return list(ctx, c, a)
		}
	}
}

// startList dials mcpd for an aggregate list verb. The returned context is
// bounded by --timeout; without it, each server's own requestTimeout bounds
// its list.
func (c *cli) startList(ctx context.Context, a listArgs) (context.Context, *listCommand, error) {
	lc := &listCommand{c: c, server: a.server, asJSON: a.asJSON, warned: map[string]bool{}}
	ctx, client, err := c.dial(ctx, a.timeout)
	if err != nil {
		return nil, nil, err
	}
	lc.client = client
	return apiclient.Outgoing(ctx, apiclient.Metadata{Profile: a.profile}), lc, nil
}

// fetch sends the list RPC of method ("tools/list", ...).
func (lc *listCommand) fetch(ctx context.Context, method string) ([]*mcpdv1.ServerList, error) {
	opts := lc.c.callOptions()
	if lc.server == "" {
		opts.TimeoutMs = perServerTimeout(ctx).Milliseconds()
	}
	lists, err := listFrom(ctx, lc.client, method, lc.server, opts)
	if err != nil {
		return nil, lc.c.rpcError(ctx, err, lc.server)
	}
	return lists, nil
}

// perServerTimeout is the request timeout of each server in an aggregate
// list: a little less than what is left of ctx, so that mcpd answers with a
// server too slow to list marked unavailable and the others listed, rather
// than the whole list running into the deadline. Zero (each server's own
// requestTimeout) when ctx has no deadline.
func perServerTimeout(ctx context.Context) time.Duration {
	dl, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	left := time.Until(dl)
	return max(left-min(left/10, time.Second), time.Millisecond)
}

// list fetches and gathers the items of method, of the given kind.
func (lc *listCommand) list(ctx context.Context, method, kind string) ([]serverItems, error) {
	lists, err := lc.fetch(ctx, method)
	if err != nil {
		return nil, err
	}
	return lc.gather(kind, lists, false)
}

// listFrom sends the list RPC of the MCP method ("tools/list",
// "prompts/list", "resources/list" or "resources/templates/list") for one
// server, or for every server when server is empty.
func listFrom(ctx context.Context, client mcpdv1.McpdClient, method, server string, opts *mcpdv1.CallOptions) ([]*mcpdv1.ServerList, error) {
	switch method {
	case "tools/list":
		r, err := client.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: server, Options: opts})
		return r.GetServers(), err
	case "prompts/list":
		r, err := client.ListPrompts(ctx, &mcpdv1.ListPromptsRequest{Server: server, Options: opts})
		return r.GetServers(), err
	case "resources/list":
		r, err := client.ListResources(ctx, &mcpdv1.ListResourcesRequest{Server: server, Options: opts})
		return r.GetServers(), err
	case "resources/templates/list":
		r, err := client.ListResourceTemplates(ctx, &mcpdv1.ListResourceTemplatesRequest{Server: server, Options: opts})
		return r.GetServers(), err
	}
	return nil, fmt.Errorf("no list rpc for %q", method)
}

// serverItems is one server's part of an aggregated list: Tool, Prompt,
// Resource or ResourceTemplate objects exactly as the server sent them.
type serverItems struct {
	server string
	items  []json.RawMessage
}

// gather checks the per-server parts of a list answer, sorted by server
// name. When the operator named one server, a server that could not be
// listed fails the command; in an aggregate list it is a warning on stderr
// and the others go on, and a verb that makes two list calls warns about a
// server once. optional marks a list some servers lack on purpose
// (resource templates): a server without it is not worth a warning.
func (lc *listCommand) gather(kind string, lists []*mcpdv1.ServerList, optional bool) ([]serverItems, error) {
	lists = append([]*mcpdv1.ServerList(nil), lists...)
	sort.SliceStable(lists, func(i, j int) bool { return lists[i].GetServer() < lists[j].GetServer() })
	var out []serverItems
	for _, l := range lists {
		name := l.GetServer()
		var problem error
		switch {
		case l.GetUnavailable() != "":
			problem = errors.New(l.GetUnavailable()) // names the server
		case l.GetError() != nil && l.GetError().GetCode() == jsonrpc.CodeMethodNotFound:
			// A server without the capability has nothing of this kind.
			if lc.server != "" && !optional {
				lc.c.warnf("server %q does not list %s: %s", name, kind, l.GetError().GetMessage())
			}
			continue
		case l.GetError() != nil:
			problem = mcpError(name, "listing "+kind, l.GetError())
		}
		var items []json.RawMessage
		if problem == nil && l.GetItemsJson() != "" {
			if err := json.Unmarshal([]byte(l.GetItemsJson()), &items); err != nil {
				problem = fmt.Errorf("server %q: bad %s list: %w", name, kind, err)
			}
		}
		if problem != nil {
			if lc.server != "" {
				return nil, problem
			}
			if !lc.warned[name] {
				lc.c.warnf("%s", problem)
			}
			lc.warned[name] = true
			continue
		}
		out = append(out, serverItems{server: name, items: items})
	}
	return out, nil
}

// itemsJSON returns every item of lists with a "server" member added, for
// --json output.
func itemsJSON(lists []serverItems) ([]json.RawMessage, error) {
	out := []json.RawMessage{}
	for _, l := range lists {
		for _, it := range l.items {
			tagged, err := withServer(it, l.server)
			if err != nil {
				return nil, fmt.Errorf("server %s: %w", l.server, err)
			}
			out = append(out, tagged)
		}
	}
	return out, nil
}

// printItemsJSON prints every item of lists with a "server" member added.
func printItemsJSON(w io.Writer, lists []serverItems) error {
	items, err := itemsJSON(lists)
	if err != nil {
		return err
	}
	return writeJSON(w, items)
}

// allItems yields every item of lists with the server it came from.
func allItems(lists []serverItems) iter.Seq2[string, listItem] {
	return func(yield func(string, listItem) bool) {
		for _, l := range lists {
			for _, raw := range l.items {
				if !yield(l.server, decodeItem(raw)) {
					return
				}
			}
		}
	}
}

// listItem holds the members of a list item that the tables show.
type listItem struct {
	Name        string `json:"name"`
	Title       string `json:"title"`
	Description string `json:"description"`
	URI         string `json:"uri"`
	URITemplate string `json:"uriTemplate"`
	MimeType    string `json:"mimeType"`
	Arguments   []struct {
		Name     string `json:"name"`
		Required bool   `json:"required"`
	} `json:"arguments"`
}

func decodeItem(raw json.RawMessage) listItem {
	var it listItem
	_ = json.Unmarshal(raw, &it) // a malformed item shows as empty cells
	return it
}

// describe is an item's description on one line, else its title.
func (it listItem) describe() string {
	if it.Description != "" {
		return oneLine(it.Description, 60)
	}
	return dash(oneLine(it.Title, 60))
}
