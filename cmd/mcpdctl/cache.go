package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var cacheCmd = &command{
	name:     "cache",
	synopsis: "[clear [NAME]] [--json]",
	short:    "show the result cache of every server, or clear it",
	long: `Without arguments, prints each server's result cache: its policy (the
"cache" key of the config; "default" keeps results only as long as the server
promises), hits (answered from memory), misses (the server was asked),
coalesced (shared an identical request in flight), and the results held now.

"cache clear" drops every cached result; "cache clear NAME" only those of one
server. The next request of each kind asks the server again.`,
	maxArgs:  2,
	setup:    cacheSetup,
	complete: completeCacheArg,
}

// cacheJSON is one server in "cache --json", and the "cache" object of a
// server in "status --json" and "servers --json" (without "server").
type cacheJSON struct {
	Server        string `json:"server,omitempty"`
	Policy        string `json:"policy"`
	Hits          int64  `json:"hits"`
	Misses        int64  `json:"misses"`
	Coalesced     int64  `json:"coalesced"`
	Entries       int64  `json:"entries"`
	Bytes         int64  `json:"bytes"`
	Invalidations int64  `json:"invalidations"`
	Evictions     int64  `json:"evictions"`
}

func cacheSetup(fs *pflag.FlagSet) runFunc {
	asJSON := fs.Bool("json", false, "print JSON")
	timeout := timeoutFlag(fs, 10*time.Second)
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		if len(args) > 0 && args[0] != "clear" {
			return &usageError{cmd: cmd, msg: fmt.Sprintf("unknown subcommand %q", args[0])}
		}
		return c.runCache(ctx, args, *asJSON, *timeout)
	}
}

func (c *cli) runCache(ctx context.Context, pos []string, asJSON bool, timeout time.Duration) error {
	ctx, cancel := c.withTimeout(ctx, timeout)
	defer cancel()
	client, err := c.connect()
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		name := ""
		if len(pos) == 2 {
			name = pos[1]
		}
		resp, err := client.ClearCache(ctx, &mcpdv1.ClearCacheRequest{Server: name})
		if err != nil {
			return c.rpcError(ctx, err, name)
		}
		if asJSON {
			return writeJSON(c.stdout, map[string]int64{"cleared": resp.GetCleared()})
		}
		what := "every server"
		if name != "" {
			what = fmt.Sprintf("%q", name)
		}
		fmt.Fprintf(c.stdout, "cleared %d cached results of %s\n", resp.GetCleared(), what)
		return nil
	}

	st, err := client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		return c.rpcError(ctx, err, "")
	}
	servers := sortedServers(st.GetServers())
	if asJSON {
		out := make([]cacheJSON, 0, len(servers))
		for _, s := range servers {
			cj := newCacheJSON(s.GetCache())
			cj.Server = s.GetName()
			out = append(out, cj)
		}
		return writeJSON(c.stdout, out)
	}
	if len(servers) == 0 {
		fmt.Fprintln(c.stdout, "no servers configured")
		return nil
	}
	return printCacheTable(c.stdout, servers)
}

// printCacheTable prints one line per server with its cache counters.
func printCacheTable(w io.Writer, servers []*mcpdv1.ServerStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tPOLICY\tHITS\tMISSES\tCOALESCED\tENTRIES\tBYTES")
	for _, s := range servers {
		cs := s.GetCache()
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\n", sanitize(s.GetName()), sanitize(policyCell(cs.GetPolicy())),
			cs.GetHits(), cs.GetMisses(), cs.GetCoalesced(), cs.GetEntries(), cs.GetBytes())
	}
	return tw.Flush()
}

func policyCell(p string) string {
	if p == "" {
		return "default"
	}
	return p
}

func newCacheJSON(cs *mcpdv1.CacheStats) cacheJSON {
	return cacheJSON{
		Policy: policyCell(cs.GetPolicy()),
		Hits:   cs.GetHits(), Misses: cs.GetMisses(), Coalesced: cs.GetCoalesced(),
		Entries: cs.GetEntries(), Bytes: cs.GetBytes(),
		Invalidations: cs.GetInvalidations(), Evictions: cs.GetEvictions(),
	}
}

// toCacheJSON is the "cache" object of a server in status --json, nil when
// mcpd reported none.
func toCacheJSON(s *mcpdv1.ServerStatus) *cacheJSON {
	if s.GetCache() == nil {
		return nil
	}
	cj := newCacheJSON(s.GetCache())
	return &cj
}
