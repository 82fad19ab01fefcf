package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"
)

var searchCmd = &command{
	name:     "search",
	synopsis: "[TERM] [--json] [--limit N] [--registry URL]",
	short:    "find MCP servers in the MCP Registry",
	long: `Lists the latest version of the servers of the MCP Registry whose name
contains TERM (every server without TERM), following the registry's pages up
to --limit: name, version, status, how it can run (npm, pypi, oci, ...
packages; streamable-http, sse remotes) and description. Answers are cached
under mcpd's state directory for an hour; when the registry cannot be
reached, search answers from the cache and says how old the answer is.
"mcpdctl add NAME" adds a server to mcpd's config.`,
	maxArgs: 1,
	setup:   searchSetup,
}

type searchJSON struct {
	Name        string   `json:"name"`
	Version     string   `json:"version"`
	Description string   `json:"description"`
	Status      string   `json:"status"`
	Transports  []string `json:"transports"`
}

func searchSetup(fs *pflag.FlagSet) runFunc {
	var reg, cfgFlag string
	asJSON := fs.Bool("json", false, "print the servers as JSON")
	limit := fs.Int("limit", 100, "list at most this many servers")
	registryFlag(fs, &reg)
	fs.StringVar(&cfgFlag, "config", "", "the config `PATH` whose \"registry\" key is read (default $MCPD_CONFIG, else $XDG_CONFIG_HOME/mcpd/config.json)")
	timeout := timeoutFlag(fs, 30*time.Second)
	return func(ctx context.Context, c *cli, _ *command, args []string) error {
		ctx, cancel := c.withTimeout(ctx, *timeout)
		defer cancel()
		term := ""
		if len(args) == 1 {
			term = args[0]
		}
		rc, err := newRegistry(registryURL(ctx, reg, cfgFlag))
		if err != nil {
			return err
		}
		defer rc.Close()
		res, err := rc.Search(ctx, term, *limit)
		if err != nil {
			return err
		}
		if res.Offline != nil {
			c.warnf("%s cannot be reached (%v); the answer is from the cache, %s old", rc.BaseURL, res.Offline, age(timeNow().Sub(res.FetchedAt)))
		}
		if *asJSON {
			out := []searchJSON{}
			for _, e := range res.Entries {
				ts := e.Transports()
				if ts == nil {
					ts = []string{}
				}
				out = append(out, searchJSON{e.Server.Name, e.Server.Version, e.Server.Description, e.Status(), ts})
			}
			return writeJSON(c.stdout, out)
		}
		if len(res.Entries) == 0 {
			fmt.Fprintf(c.stdout, "no server matches %q\n", term)
			return nil
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tVERSION\tSTATUS\tRUNS AS\tDESCRIPTION")
		for _, e := range res.Entries {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sanitize(e.Server.Name), sanitize(e.Server.Version), sanitize(e.Status()),
				sanitize(strings.Join(e.Transports(), ",")), sanitize(e.Server.Description))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if res.More {
			fmt.Fprintf(c.stdout, "(more servers match; raise --limit or narrow the term)\n")
		}
		return nil
	}
}
