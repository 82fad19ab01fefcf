package main

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"
)

var resourcesCmd = &command{
	name:     "resources",
	synopsis: "[NAME] [--json]",
	short:    "list the resources and resource templates of one server, or of all",
	long: `--json prints {"resources": [...], "resource_templates": [...]}: the MCP
Resource and ResourceTemplate objects as the servers sent them, each with a
"server" member added.`,
	maxArgs:  1,
	setup:    listSetup("print the resources and templates as JSON", runResources),
	complete: completeServerArg,
}

func runResources(ctx context.Context, c *cli, a listArgs) error {
	ctx, lc, err := c.startList(ctx, a)
	if err != nil {
		return err
	}
	res, err := lc.fetch(ctx, "resources/list")
	if err != nil {
		return err
	}
	tmpl, err := lc.fetch(ctx, "resources/templates/list")
	if err != nil {
		return err
	}
	resources, err := lc.gather("resources", res, false)
	if err != nil {
		return err
	}
	// A server without templates has nothing to warn about.
	templates, err := lc.gather("resource templates", tmpl, true)
	if err != nil {
		return err
	}
	if lc.asJSON {
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
	for server, it := range allItems(resources) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sanitize(server), sanitize(it.URI), sanitize(it.Name), dash(it.MimeType), it.describe())
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
	for server, it := range allItems(templates) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sanitize(server), sanitize(it.URITemplate), sanitize(it.Name), dash(it.MimeType), it.describe())
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
