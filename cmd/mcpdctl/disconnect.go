package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aymanbagabas/go-udiff"
	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/hosts"
	"github.com/mcpd-dev/mcpd/internal/importer"
)

var disconnectCmd = &command{
	name:     "disconnect",
	synopsis: "HOST... | --all [--dry-run] [--remove-servers] [--project DIR]",
	short:    "undo connect: put hosts' config files back",
	long: `disconnect undoes what connect did to each file of a host. A file nobody
changed since connect is put back byte for byte from its backup. A file
changed since (by the user, or by the host) gets back only the entries
connect rewrote that still read as connect wrote them; the others are
kept, and disconnect says which. After connect --aggregate, the entries
it removed come back (at the end of their map, unless an entry of that
name is there again) and its "mcpd" entry goes (unless changed since).
The file as it was before disconnect is backed up too, under mcpd's
state directory.

The servers stay in mcpd's config, where other hosts may use them;
--remove-servers takes out those connect added that no connected host
uses any more.`,
	maxArgs:  -1,
	setup:    disconnectSetup,
	complete: completeHosts,
}

func disconnectSetup(fs *pflag.FlagSet) runFunc {
	var a connectArgs
	a.common(fs)
	fs.BoolVar(&a.removeServers, "remove-servers", false, "also remove from mcpd's config the servers connect added that no connected host uses")
	return a.run((*cli).disconnectHosts)
}

func (c *cli) disconnectHosts(ctx context.Context, hs []*hosts.Host, a connectArgs) error {
	st, err := c.connectStart(ctx, a)
	if err != nil {
		return err
	}
	failed, done := 0, 0
	var freed []string // mcpd servers the restored entries reached
	for _, h := range hs {
		n := 0
		for _, f := range h.Files(st.env) {
			rec, err := st.store.Record(f.Path)
			if err != nil {
				c.warnf("%s: %v", h.Name, err)
				failed++
				continue
			}
			if rec == nil {
				continue
			}
			n++
			o, err := hosts.Open(h, f, st.reach)
			if err != nil {
				c.warnf("%s: %v; left as it is", h.Name, err)
				failed++
				continue
			}
			res, err := st.store.Disconnect(o, a.dryRun, time.Now())
			if err != nil {
				c.warnf("%s: %v; left as it is", f.Path, err)
				failed++
				continue
			}
			done++
			c.reportRestore(h, res, a.dryRun)
			for _, r := range rec.Rounds {
				for _, ch := range r.Changes {
					freed = append(freed, ch.Server)
				}
			}
		}
		if n == 0 && !a.all {
			fmt.Fprintf(c.stdout, "%s: not connected; nothing to undo\n", h.Name)
		}
	}
	if a.all && done == 0 && failed == 0 {
		fmt.Fprintln(c.stdout, "no host is connected; nothing to undo")
	}
	if a.removeServers && !a.dryRun {
		if err := c.removeServers(ctx, st, freed); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d file(s) not restored (see above)", failed)
	}
	return nil
}

// reportRestore says what disconnect did to one file.
func (c *cli) reportRestore(h *hosts.Host, res *hosts.Restore, dryRun bool) {
	if dryRun {
		fmt.Fprint(c.stdout, udiff.Unified(res.Path, res.Path+" (disconnected)", string(res.Before), string(res.After)))
		return
	}
	if res.Whole {
		fmt.Fprintf(c.stdout, "%s (%s): restored as it was before connect\n", h.Name, res.Path)
		return
	}
	fmt.Fprintf(c.stdout, "%s (%s): changed since connect; restored %d entr%s\n", h.Name, res.Path, len(res.Restored), plural(len(res.Restored), "y", "ies"))
	for _, k := range res.Kept {
		fmt.Fprintf(c.stdout, "  kept %s\n", k)
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// removeServers takes out of mcpd's config the servers in names that no
// host file connect still has a record of reaches.
func (c *cli) removeServers(ctx context.Context, st *connectState, names []string) error {
	still := map[string]bool{}
	for _, h := range hosts.All() {
		for _, f := range h.Files(st.env) {
			if rec, _ := st.store.Record(f.Path); rec != nil {
				for _, r := range rec.Rounds {
					for _, ch := range r.Changes {
						still[ch.Server] = true
					}
				}
			}
		}
	}
	var drop []string
	for _, n := range names {
		if st.mc.Has(n) && !still[n] && !slices.Contains(drop, n) {
			drop = append(drop, n)
		}
	}
	if len(drop) == 0 {
		return nil
	}
	slices.Sort(drop)
	out, err := importer.RemoveServers(st.mc, drop)
	if err != nil {
		return err
	}
	if err := writeMcpdConfig(st.store, st.mc, out); err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s: removed %s\n", st.mc.Path, strings.Join(drop, ", "))
	c.reloadAfterConnect(ctx, st.mc.Path)
	return nil
}
