package main

import (
	"context"
	"fmt"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/registry"
)

var outdatedCmd = &command{
	name:     "outdated",
	synopsis: "[--json]",
	short:    "list the servers added from the MCP Registry that have a newer version",
	long: `Asks the MCP Registry for the latest version of each server "mcpdctl add"
wrote (recorded under mcpd's state directory) and lists those with a newer
one: the local name, the registry name, the version configured and the
latest. "mcpdctl add NAME@latest --as LOCAL" updates one.`,
	setup: outdatedSetup,
}

type outdatedJSON struct {
	Local   string `json:"local"`
	Name    string `json:"name"`
	Current string `json:"current"`
	Latest  string `json:"latest"`
}

func outdatedSetup(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print the servers as JSON")
	timeout := timeoutFlag(fs, 60*time.Second)
	return func(ctx context.Context, c *cli, _ *command, _ []string) error {
		ctx, cancel := c.withTimeout(ctx, *timeout)
		defer cancel()
		recs, err := registry.LoadRecords(registry.RecordsPath(paths.StateDir()))
		if err != nil {
			return err
		}
		locals := make([]string, 0, len(recs))
		for l := range recs {
			locals = append(locals, l)
		}
		sort.Strings(locals)
		clients := map[string]*registry.Client{}
		defer func() {
			for _, rc := range clients {
				rc.Close()
			}
		}()
		out := []outdatedJSON{}
		for _, l := range locals {
			r := recs[l]
			rc := clients[r.Registry]
			if rc == nil {
				if rc, err = newRegistry(r.Registry); err != nil {
					return err
				}
				clients[r.Registry] = rc
			}
			e, _, err := rc.Get(ctx, r.Name, "latest")
			if err != nil {
				c.warnf("%s (%s): %v", l, r.Name, err)
				continue
			}
			if registry.Newer(e.Server.Version, r.Version) {
				out = append(out, outdatedJSON{l, r.Name, r.Version, e.Server.Version})
			}
		}
		if *asJSON {
			return writeJSON(c.stdout, out)
		}
		if len(out) == 0 {
			fmt.Fprintf(c.stdout, "every server added from the registry (%d) is at its latest version\n", len(recs))
			return nil
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "LOCAL\tNAME\tCURRENT\tLATEST")
		for _, o := range out {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", sanitize(o.Local), sanitize(o.Name), sanitize(o.Current), sanitize(o.Latest))
		}
		return tw.Flush()
	}
}
