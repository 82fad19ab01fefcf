package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/mcpd-dev/mcpd/internal/hosts"
)

var hostsCmd = &command{
	name:     "hosts",
	synopsis: "[--project DIR] [--json]",
	short:    "list the MCP hosts found for this user, and how many of their servers go through mcpd",
	long: `hosts lists each MCP host whose config file is found for this user (with
--project, the project's files too): its id for connect and disconnect,
its config file, its MCP server entries, how many of them already go
through mcpd, and how it reaches mcpd: "http" (mcpd's per-server HTTP
door) or "bridge" (the host runs "mcpdctl bridge NAME").`,
	maxArgs: 0,
	setup:   hostsSetup,
}

// hostRow is one host file in hosts' output.
type hostRow struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	File        string `json:"file"`
	Scope       string `json:"scope"`
	Servers     int    `json:"servers"`
	ViaMcpd     int    `json:"via_mcpd"`
	Reach       string `json:"reach"`
	Connected   bool   `json:"connected"`
	Error       string `json:"error,omitempty"`
	Unsupported int    `json:"unsupported"`
}

func hostsSetup(fs *pflag.FlagSet) runFunc {
	var project string
	var asJSON bool
	var timeout time.Duration
	fs.DurationVar(&timeout, "timeout", 5*time.Second, "give up asking mcpd after this long; 0 means no limit")
	fs.StringVar(&project, "project", "", "also the project files of the project in `DIR`")
	fs.BoolVar(&asJSON, "json", false, "print the list as JSON")
	return func(ctx context.Context, c *cli, cmd *command, args []string) error {
		ctx, cancel := c.withTimeout(ctx, timeout)
		defer cancel()
		rows, err := c.hostRows(ctx, project)
		if err != nil {
			return err
		}
		if asJSON {
			enc := json.NewEncoder(c.stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		}
		c.printHosts(rows)
		return nil
	}
}

func (c *cli) hostRows(ctx context.Context, project string) ([]hostRow, error) {
	st, err := c.connectStart(ctx, connectArgs{project: project})
	if err != nil {
		return nil, err
	}
	rows := []hostRow{}
	for _, h := range hosts.All() {
		reach := "bridge"
		if h.HTTP && st.reach.HTTP != "" {
			reach = "http"
		}
		opened, errs := hosts.Present(h, st.env, st.reach)
		for _, err := range errs {
			rows = append(rows, hostRow{ID: h.ID, Name: h.Name, Reach: reach, Error: err.Error()})
		}
		for _, o := range opened {
			r := hostRow{ID: h.ID, Name: h.Name, File: o.File.Path, Scope: o.File.Scope, Servers: len(o.Entries), Reach: reach}
			for _, e := range o.Entries {
				switch e.State {
				case hosts.Connected:
					r.ViaMcpd++
				case hosts.Unsupported:
					r.Unsupported++
				}
			}
			if rec, _ := st.store.Record(o.File.Path); rec != nil {
				r.Connected = true
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

func (c *cli) printHosts(rows []hostRow) {
	if len(rows) == 0 {
		fmt.Fprintf(c.stdout, "no MCP host config found; known hosts: %s\n", strings.Join(hostIDs(), ", "))
		return
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tFILE\tSERVERS\tVIA MCPD\tREACHES MCPD BY")
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t%s\n", r.ID, sanitize(r.Error), r.Reach)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\n", r.ID, sanitize(r.File), r.Servers, r.ViaMcpd, r.Reach)
	}
	tw.Flush()
}
