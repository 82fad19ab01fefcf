package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var resourcesCmd = &command{
	name:     "resources",
	synopsis: "[NAME] [--json]",
	short:    "list the resources and resource templates of one server, or of all",
	long: `--json prints {"resources": [...], "resource_templates": [...]}: the MCP
Resource and ResourceTemplate objects as the servers sent them, each with a
"server" member added.`,
	run: runResources,
}

func runResources(ctx context.Context, c *cli, cmd *command, args []string) error {
	fs := c.flags(cmd)
	asJSON := fs.Bool("json", false, "print the resources and templates as JSON")
	timeout := timeoutFlag(fs, 60*time.Second)
	pos, err := c.parseArgs(cmd, fs, args, 0, 1)
	if err != nil {
		return err
	}
	name := ""
	if len(pos) == 1 {
		name = pos[0]
	}
	ctx, cancel := c.withTimeout(ctx, *timeout)
	defer cancel()
	client, err := c.connect()
	if err != nil {
		return err
	}
	res, err := client.ListResources(ctx, &mcpdv1.ListResourcesRequest{Server: name, Options: c.callOptions()})
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	tmpl, err := client.ListResourceTemplates(ctx, &mcpdv1.ListResourceTemplatesRequest{Server: name, Options: c.callOptions()})
	if err != nil {
		return c.rpcError(ctx, err, name)
	}
	warned := make(map[string]bool)
	resources, err := c.gatherLists("resources", name, res.GetServers(), warned, false)
	if err != nil {
		return err
	}
	templates, err := c.gatherLists("resource templates", name, tmpl.GetServers(), warned, true)
	if err != nil {
		return err
	}
	if *asJSON {
		r, err := itemsJSON(resources)
		if err != nil {
			return err
		}
		t, err := itemsJSON(templates)
		if err != nil {
			return err
		}
		return writeJSON(c.stdout, struct {
			Resources         []json.RawMessage `json:"resources"`
			ResourceTemplates []json.RawMessage `json:"resource_templates"`
		}{r, t})
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tURI\tNAME\tMIME TYPE\tDESCRIPTION")
	for _, l := range resources {
		for _, raw := range l.items {
			it := decodeItem(raw)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.server, it.URI, it.Name, dash(it.MimeType), it.describe())
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if countItems(templates) == 0 {
		return nil
	}
	fmt.Fprintln(c.stdout)
	fmt.Fprintln(c.stdout, "Templates:")
	tw = tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tURI TEMPLATE\tNAME\tMIME TYPE\tDESCRIPTION")
	for _, l := range templates {
		for _, raw := range l.items {
			it := decodeItem(raw)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.server, it.URITemplate, it.Name, dash(it.MimeType), it.describe())
		}
	}
	return tw.Flush()
}

func countItems(lists []serverItems) int {
	n := 0
	for _, l := range lists {
		n += len(l.items)
	}
	return n
}
