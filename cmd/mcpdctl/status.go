package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var statusCmd = &command{
	name:     "status",
	synopsis: "[--json] [-q]",
	short:    "show the daemon and every server",
	long: `Prints a line about the daemon (version, pid, uptime, socket, config), a
line about what sharing saves (the apps using servers, the server processes
mcpd runs for them and their memory, and what the same apps would run
without mcpd: one process per app per server it used), and a table of the
servers. --json prints one JSON object with a "servers" array;
-q prints the server names only.`,
	setup: func(fs *pflag.FlagSet) runFunc {
		view := viewFlags(fs, "print one JSON object")
		return func(ctx context.Context, c *cli, _ *command, _ []string) error { return runStatus(ctx, c, *view) }
	},
}

// statusJSON is the stable JSON shape of "status --json".
type statusJSON struct {
	Version     string       `json:"version"`
	Pid         int64        `json:"pid"`
	UptimeMs    int64        `json:"uptime_ms"`
	SocketPath  string       `json:"socket_path"`
	ConfigPath  string       `json:"config_path"`
	ConfigError string       `json:"config_error"`
	Servers     []serverJSON `json:"servers"`
	Apps        []appJSON    `json:"apps"`
	// Subscriptions are the open Subscribe streams (status_ops.go).
	Subscriptions []subscriptionJSON `json:"subscriptions"`
	// HTTP is mcpd's Streamable HTTP face for MCP hosts.
	HTTP httpJSON `json:"http"`
	// AuditPath is the audit log file (mcpdctl audit); "" when it is off.
	AuditPath string `json:"audit_path"`
	// Sharing is what sharing the servers saves (status_sharing.go).
	Sharing sharingJSON `json:"sharing"`
	// Secrets is where mcpd reads ${secret:NAME} values from: the Secret
	// Service or the fallback file (and why).
	Secrets string `json:"secrets"`
	// OAuthTokens is where mcpd keeps the remote servers' OAuth tokens: the
	// Secret Service or the fallback file (and why), and whether they
	// could not be read yet.
	OAuthTokens string `json:"oauth_tokens"`
}

// httpJSON is the HTTP face in "status --json": the configured address,
// the URLs hosts use (empty when off), and why it is off.
type httpJSON struct {
	Listen    string   `json:"listen"`
	URLs      []string `json:"urls"`
	OffReason string   `json:"off_reason"`
}

// appJSON is one connected app in "status --json".
type appJSON struct {
	Name              string `json:"name"`
	Version           string `json:"version"`
	Pid               int64  `json:"pid"`
	ConnectedAtUnixMs int64  `json:"connected_at_unix_ms"`
	Transport         string `json:"transport"`
	// Profile is the profile of the app's last call under one, "" for none.
	Profile string `json:"profile"`
}

// runStatus prints the daemon's status as JSON, as server names (-q), or
// as text.
func runStatus(ctx context.Context, c *cli, view viewArgs) error {
	ctx, client, err := c.dial(ctx, view.timeout)
	if err != nil {
		return err
	}
	st, err := client.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		return c.rpcError(ctx, err, "")
	}
	switch {
	case view.asJSON:
		return writeJSON(c.stdout, toStatusJSON(st))
	case view.quiet:
		printNames(c.stdout, st.GetServers())
		return nil
	}
	printStatus(c.stdout, st)
	return nil
}

// toStatusJSON is st in the shape of "status --json".
func toStatusJSON(st *mcpdv1.GetStatusResponse) statusJSON {
	out := statusJSON{
		Version:       st.GetVersion(),
		Pid:           st.GetPid(),
		UptimeMs:      st.GetUptimeMs(),
		SocketPath:    st.GetSocketPath(),
		ConfigPath:    st.GetConfigPath(),
		ConfigError:   st.GetConfigError(),
		Servers:       toServersJSON(st.GetServers()),
		Apps:          []appJSON{},
		Subscriptions: toSubscriptionsJSON(st.GetSubscriptions()),
		HTTP: httpJSON{Listen: st.GetHttp().GetListen(), URLs: append([]string{}, st.GetHttp().GetUrls()...),
			OffReason: st.GetHttp().GetOffReason()},
		AuditPath:   st.GetAuditPath(),
		Sharing:     toSharingJSON(st.GetSharing()),
		Secrets:     st.GetSecrets(),
		OAuthTokens: st.GetOauthTokens(),
	}
	addServerOps(out.Servers, st)
	for _, a := range st.GetApps() {
		out.Apps = append(out.Apps, appJSON{
			Name:              a.GetName(),
			Version:           a.GetVersion(),
			Pid:               a.GetPid(),
			ConnectedAtUnixMs: a.GetConnectedAtUnixMs(),
			Transport:         a.GetTransport(),
			Profile:           a.GetProfile(),
		})
	}
	return out
}

// printStatus prints st as text: the daemon's line, sharing, config error
// and HTTP face, the server table, where audit, secrets and OAuth tokens
// go, the apps and the subscriptions.
func printStatus(w io.Writer, st *mcpdv1.GetStatusResponse) {
	config := st.GetConfigPath()
	if config == "" {
		config = "(none)"
	}
	fmt.Fprintf(w, "mcpd %s  pid %d  up %s  socket %s  config %s\n",
		dash(st.GetVersion()), st.GetPid(), formatDuration(st.GetUptimeMs()), dash(st.GetSocketPath()), sanitize(config))
	printSharing(w, st.GetSharing())
	if e := st.GetConfigError(); e != "" {
		fmt.Fprintf(w, "config error: %s\n", oneLine(e, 200))
	}
	printHTTP(w, st.GetHttp())
	fmt.Fprintln(w)
	if len(st.GetServers()) == 0 {
		fmt.Fprintln(w, "no servers configured")
	} else {
		printStatusTable(w, st)              // status_ops.go
		printToolChanges(w, st.GetServers()) // toolswatch.go
		printOAuth(w, st.GetServers())
	}
	if p := st.GetAuditPath(); p != "" {
		fmt.Fprintf(w, "audit log %s (mcpdctl audit)\n", sanitize(p))
	}
	if b := st.GetSecrets(); b != "" {
		fmt.Fprintf(w, "secrets %s (mcpdctl secret ls)\n", sanitize(b))
	}
	if b := st.GetOauthTokens(); b != "" {
		fmt.Fprintf(w, "oauth tokens %s\n", sanitize(b))
	}
	printApps(w, st.GetApps())
	printSubscriptions(w, st.GetSubscriptions())
}

// printApps prints the table of the connected apps, if any.
func printApps(w io.Writer, apps []*mcpdv1.AppStatus) {
	if len(apps) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "APP\tVERSION\tPID\tCONNECTED\tPROFILE")
	now := timeNow().UnixMilli()
	for _, a := range apps {
		connected := "-"
		if at := a.GetConnectedAtUnixMs(); at > 0 {
			connected = formatDuration(now-at) + " ago"
		}
		name := dash(a.GetName())
		if t := a.GetTransport(); t != "" && t != "grpc" {
			name += " (" + t + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sanitize(name), dash(a.GetVersion()), pidCell(a.GetPid()), connected, dash(a.GetProfile()))
	}
	tw.Flush()
}

// viewArgs is the command line that status and servers share.
type viewArgs struct {
	asJSON  bool
	quiet   bool
	timeout time.Duration
}

// viewFlags declares the flags of status and servers: --json (printing
// what jsonUsage says), -q and --timeout.
func viewFlags(fs *pflag.FlagSet, jsonUsage string) *viewArgs {
	var v viewArgs
	fs.BoolVar(&v.asJSON, "json", false, jsonUsage)
	fs.BoolVarP(&v.quiet, "quiet", "q", false, "print server names only")
	fs.DurationVar(&v.timeout, "timeout", 10*time.Second, "give up after this long; 0 means no limit")
	return &v
}

// printServerTable prints the servers table that status and servers share.
func printServerTable(w io.Writer, servers []*mcpdv1.ServerStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPID\tUPTIME\tRESTARTS\tPROTOCOL\tLAST ERROR")
	for _, s := range sortedServers(servers) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n",
			sanitize(s.GetName()), stateName(s.GetState()), pidCell(s.GetPid()), uptimeCell(s),
			s.GetRestarts(), protocolCell(s), dash(lastErrorCell(s)))
	}
	tw.Flush()
}

func printNames(w io.Writer, servers []*mcpdv1.ServerStatus) {
	for _, s := range sortedServers(servers) {
		fmt.Fprintln(w, sanitize(s.GetName()))
	}
}

// printHTTP prints the HTTP face's line: the aggregate URL (each server's
// is under /servers/NAME/mcp), or why it is off.
func printHTTP(w io.Writer, h *mcpdv1.HttpStatus) {
	switch {
	case h == nil:
	case len(h.GetUrls()) > 0:
		line := "http " + sanitize(h.GetUrls()[0]) + " (one server: /servers/NAME/mcp)"
		if l := h.GetListen(); len(l) > 5 && l[:5] == "unix:" {
			line += " on " + sanitize(l)
		}
		fmt.Fprintln(w, line)
		for _, u := range h.GetUrls() {
			if i := strings.LastIndex(u, "/profiles/"); i >= 0 {
				name := strings.TrimSuffix(u[i+len("/profiles/"):], "/mcp")
				if n, err := url.PathUnescape(name); err == nil {
					name = n
				}
				fmt.Fprintf(w, "http profile %s: %s\n", sanitize(name), sanitize(u))
			}
		}
	default:
		fmt.Fprintf(w, "http off: %s\n", oneLine(h.GetOffReason(), 200))
	}
}
