package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// fleetRow is the figure users quote: N apps (hosts) that each use the
// same M npm servers, each app with its own copy of every server, as
// hosts run them today, against mcpd with one copy of each shared by the
// N apps. The apps themselves are the same on both sides and not counted.
type fleetRow struct {
	Apps    int      `json:"apps"`
	Servers []string `json:"servers"`
	// DirectProcs and McpdProcs count the processes: the servers' trees,
	// and mcpd's tree (mcpd and its children).
	DirectProcs int     `json:"direct_processes"`
	McpdProcs   int     `json:"mcpd_processes"`
	DirectRSS   int64   `json:"direct_rss_bytes"`
	DirectPSS   int64   `json:"direct_pss_bytes"`
	McpdRSS     int64   `json:"mcpd_rss_bytes"`
	McpdPSS     int64   `json:"mcpd_pss_bytes"`
	PSSRatio    float64 `json:"pss_ratio"`
}

// fleetTargets are the npm servers beside server-everything in
// node_modules (server-memory, server-filesystem on a scratch directory),
// the servers a host config typically names; only those installed.
func (b *bench) fleetTargets() []target {
	if b.o.noNode {
		return nil
	}
	root := filepath.Dir(filepath.Dir(filepath.Dir(b.o.everything))) // node_modules/@modelcontextprotocol
	ts := []target{{Name: "everything", Command: b.o.node, Args: []string{b.o.everything, "stdio"}}}
	for _, s := range []struct{ name, pkg string }{{"memory", "server-memory"}, {"filesystem", "server-filesystem"}} {
		script := filepath.Join(root, s.pkg, "dist", "index.js")
		if _, err := os.Stat(script); err != nil {
			continue
		}
		args := []string{script}
		if s.name == "filesystem" {
			args = append(args, b.tmp)
		}
		ts = append(ts, target{Name: s.name, Command: b.o.node, Args: args})
	}
	return ts
}

// fleet is the section of fleetRow: for each count of apps, the servers
// run directly (every app's copies handshaken and listed) and then through
// mcpd (every app connected and listing every server), never both alive at
// once, so that PSS is not flattered by the other side's processes.
func (b *bench) fleet(ctx context.Context) error {
	ts := b.fleetTargets()
	if len(ts) == 0 {
		b.rep.FleetNote = "not run (-no-node)"
		return nil
	}
	names := make([]string, len(ts))
	servers := map[string]serverConfig{}
	for i, t := range ts {
		names[i] = t.Name
		servers[t.Name] = serverConfig{Command: t.Command, Args: t.Args}
	}
	apps := []int{4, 16}
	if b.o.smoke {
		apps = []int{2}
	}
	for _, n := range apps {
		b.progress("fleet: %d apps × %s", n, strings.Join(names, ", "))
		row := fleetRow{Apps: n, Servers: names}
		var err error
		if row.DirectProcs, row.DirectRSS, row.DirectPSS, err = b.fleetDirect(ctx, ts, n); err != nil {
			return err
		}
		if row.McpdProcs, row.McpdRSS, row.McpdPSS, err = b.fleetMcpd(ctx, servers, names, n); err != nil {
			return err
		}
		row.PSSRatio = ratio(float64(row.McpdPSS), float64(row.DirectPSS))
		b.rep.Fleet = append(b.rep.Fleet, row)
	}
	return nil
}

// fleetDirect starts every target once per app, handshakes and lists its
// tools, and sums the process trees.
func (b *bench) fleetDirect(ctx context.Context, ts []target, apps int) (procs int, rss, pss int64, err error) {
	var clients []*direct
	defer func() {
		for _, c := range clients {
			c.close()
		}
	}()
	for range apps {
		for _, t := range ts {
			c, _, err := startDirect(ctx, b.reg, t)
			if err != nil {
				return 0, 0, 0, err
			}
			clients = append(clients, c)
			if _, err := c.call(ctx, "tools/list", nil); err != nil {
				return 0, 0, 0, fmt.Errorf("tools/list of %s: %w", t.Name, err)
			}
		}
	}
	for _, c := range clients {
		n, m, err := treeCount(c.pid())
		if err != nil {
			return 0, 0, 0, err
		}
		procs, rss, pss = procs+n, rss+m.RSS, pss+m.PSS
	}
	return procs, rss, pss, nil
}

// fleetMcpd starts mcpd with the servers, connects the apps, each listing
// every server's tools, and measures mcpd's process tree.
func (b *bench) fleetMcpd(ctx context.Context, servers map[string]serverConfig, names []string, apps int) (procs int, rss, pss int64, err error) {
	d, err := startDaemon(ctx, b.reg, b.o.mcpd, servers)
	if err != nil {
		return 0, 0, 0, err
	}
	defer d.stop()
	closeApps, err := connectApps(d, apps, func(c mcpdv1.McpdClient) error {
		for _, name := range names {
			if _, err := c.ListTools(ctx, &mcpdv1.ListToolsRequest{Server: name}); err != nil {
				return fmt.Errorf("tools/list of %s through mcpd: %w", name, err)
			}
		}
		return nil
	})
	defer closeApps()
	if err != nil {
		return 0, 0, 0, err
	}
	for _, name := range names {
		if _, err := d.serverPid(ctx, name); err != nil {
			return 0, 0, 0, err
		}
	}
	n, m, err := treeCount(d.pid())
	return n, m.RSS, m.PSS, err
}

// treeCount is the number of processes in pid's tree and their memory.
func treeCount(pid int) (int, memory, error) {
	m, err := treeMemory(pid)
	if err != nil {
		return 0, memory{}, err
	}
	return 1 + len(descendants(pid)), m, nil
}

// printFleet prints the fleet section of the report.
func printFleet(w io.Writer, r *report) {
	fmt.Fprintln(w, "4b. fleet: N apps × M npm servers, each app with its own copies vs mcpd with one copy each")
	if len(r.Fleet) == 0 {
		fmt.Fprintf(w, "%s\n\n", r.FleetNote)
		return
	}
	fmt.Fprint(w, fleetTable(r.Fleet), "\n")
}

// fleetTable is the fleet rows as a Markdown table: the report prints it,
// and the headline starts with it.
func fleetTable(rows []fleetRow) string {
	var b strings.Builder
	b.WriteString("| apps × servers | as hosts run them: processes, RSS, PSS | through mcpd: processes, RSS, PSS | PSS through mcpd |\n|---|---|---|---|\n")
	for _, x := range rows {
		fmt.Fprintf(&b, "| %d × %d (%s) | %d, %s MiB, %s MiB | %d, %s MiB, %s MiB | %.2f× |\n",
			x.Apps, len(x.Servers), strings.Join(x.Servers, ", "),
			x.DirectProcs, mib(x.DirectRSS), mib(x.DirectPSS),
			x.McpdProcs, mib(x.McpdRSS), mib(x.McpdPSS), x.PSSRatio)
	}
	return b.String()
}
