package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// This file is the operator's detail of "status": per server the calls,
// errors, cache hits and subscriptions, the backoff / crash-loop countdown,
// and the open subscription streams.

// subscriptionJSON is one open Subscribe stream in "status --json".
type subscriptionJSON struct {
	ID            uint64   `json:"subscription_id"`
	AppName       string   `json:"app_name"`
	AppVersion    string   `json:"app_version"`
	AppPid        int64    `json:"app_pid"`
	Servers       []string `json:"servers"`
	ResourceURIs  int64    `json:"resource_uris"`
	CreatedUnixMs int64    `json:"created_unix_ms"`
	Queued        int64    `json:"queued"`
	QueuedBytes   int64    `json:"queued_bytes"`
	Delivered     uint64   `json:"delivered"`
	Coalesced     uint64   `json:"coalesced"`
	Dropped       uint64   `json:"dropped"`
	Lagged        bool     `json:"lagged"`
	LogsDropped   uint64   `json:"dropped_log_messages"`
}

func toSubscriptionsJSON(in []*mcpdv1.SubscriptionStatus) []subscriptionJSON {
	out := []subscriptionJSON{}
	for _, s := range in {
		servers := s.GetServers()
		if servers == nil {
			servers = []string{}
		}
		out = append(out, subscriptionJSON{s.GetSubscriptionId(), s.GetAppName(), s.GetAppVersion(), s.GetAppPid(),
			servers, s.GetResourceUris(), s.GetCreatedUnixMs(), s.GetQueued(), s.GetQueuedBytes(),
			s.GetDelivered(), s.GetCoalesced(), s.GetDropped(), s.GetLagged(), s.GetDroppedLogMessages()})
	}
	return out
}

// serverOps is what status adds per server from the subscription streams.
type serverOps struct {
	subscriptions int
	apps          []string // distinct app names of those streams
	dropped       uint64   // events those streams lost (lagged)
	coalesced     uint64
}

// watches reports whether stream s watches server name.
func watches(s *mcpdv1.SubscriptionStatus, name string) bool {
	return len(s.GetServers()) == 0 || slices.Contains(s.GetServers(), name)
}

func opsOf(st *mcpdv1.GetStatusResponse, name string) serverOps {
	var o serverOps
	for _, s := range st.GetSubscriptions() {
		if !watches(s, name) {
			continue
		}
		o.subscriptions++
		o.dropped += s.GetDropped()
		o.coalesced += s.GetCoalesced()
		app := s.GetAppName()
		switch {
		case app != "":
		case s.GetAppPid() > 0:
			app = fmt.Sprintf("pid %d", s.GetAppPid())
		default:
			app = "unnamed app" // no name given, and no process of its own (the HTTP face's)
		}
		if !slices.Contains(o.apps, app) {
			o.apps = append(o.apps, app)
		}
	}
	slices.Sort(o.apps)
	return o
}

// addServerOps fills the per-server fields only "status --json" has: the
// subscriptions and the tool changes pending approval.
func addServerOps(servers []serverJSON, st *mcpdv1.GetStatusResponse) {
	for i := range servers {
		o := opsOf(st, servers[i].Name)
		apps := o.apps
		if apps == nil {
			apps = []string{}
		}
		servers[i].Subscriptions = &o.subscriptions
		servers[i].SubscribedApps = apps
		servers[i].NotificationsDropped = &o.dropped
		servers[i].NotificationsCoalesced = &o.coalesced
	}
	for _, s := range st.GetServers() {
		for i := range servers {
			if servers[i].Name == s.GetName() {
				n := s.GetToolChangesPending()
				servers[i].ToolChangesPending = &n
			}
		}
	}
}

// printStatusTable is the servers table of "status": the columns of
// "servers" plus calls, errors, cache hits and subscriptions.
func printStatusTable(w io.Writer, st *mcpdv1.GetStatusResponse) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSTATE\tPID\tUPTIME\tRESTARTS\tPROTOCOL\tCALLS\tERRORS\tCACHE HITS\tSUBS\tLAST ERROR")
	for _, s := range sortedServers(st.GetServers()) {
		o := opsOf(st, s.GetName())
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%d/%d\t%d\t%d\t%d\t%s\n",
			sanitize(s.GetName()), stateCell(s), pidCell(s.GetPid()), uptimeCell(s), s.GetRestarts(), protocolCell(s),
			s.GetCallsInFlight(), s.GetCallsTotal(), s.GetCallsFailed(), s.GetCache().GetHits(), o.subscriptions,
			dash(lastErrorCell(s)))
		printInstanceRows(tw, s)
	}
	tw.Flush()
	// The details that do not fit a column: who the server is, its last
	// stderr line, notifications lost by slow apps.
	var details []string
	for _, s := range sortedServers(st.GetServers()) {
		var parts []string
		if e := s.GetConfigError(); e != "" {
			// In full: it says what to set and where.
			parts = append(parts, "config: "+oneLine(e, 400))
		}
		if info := serverInfoCell(s.GetServerInfoJson()); info != "" {
			parts = append(parts, info)
		}
		if sb := s.GetSandbox(); sb != "" {
			parts = append(parts, "sandbox: "+oneLine(sb, 300))
		}
		if o := opsOf(st, s.GetName()); len(o.apps) > 0 || o.dropped > 0 {
			parts = append(parts, fmt.Sprintf("apps: %s", sanitize(strings.Join(o.apps, ", "))))
			if o.dropped > 0 {
				parts = append(parts, fmt.Sprintf("dropped notifications: %d", o.dropped))
			}
		}
		if l := s.GetLastStderrLine(); l != "" {
			parts = append(parts, "stderr: "+oneLine(l, 100))
		}
		if len(parts) > 0 {
			details = append(details, fmt.Sprintf("  %s: %s", sanitize(s.GetName()), strings.Join(parts, "; ")))
		}
	}
	if len(details) > 0 {
		fmt.Fprintln(w)
		for _, d := range details {
			fmt.Fprintln(w, d)
		}
	}
}

// stateCell is the state, with the countdown of a backoff or crash loop.
func stateCell(s *mcpdv1.ServerStatus) string {
	name := stateName(s.GetState())
	if ms := s.GetNextRestartInMs(); ms > 0 {
		switch s.GetState() {
		case mcpdv1.ServerState_SERVER_STATE_BACKOFF:
			return fmt.Sprintf("%s (restart in %s)", name, formatDuration(ms))
		case mcpdv1.ServerState_SERVER_STATE_CRASHLOOP:
			return fmt.Sprintf("%s (held %s)", name, formatDuration(ms))
		}
	}
	if s.GetExplicitlyStopped() {
		return name + " (by operator)"
	}
	if s.GetDisabled() {
		return "disabled"
	}
	return name
}

// serverInfoCell renders the child's Implementation object as "name
// version", sanitized.
func serverInfoCell(raw string) string {
	var info struct {
		Name    string `json:"name"`
		Version string `json:"version"`
	}
	if raw == "" || json.Unmarshal([]byte(raw), &info) != nil || info.Name == "" {
		return ""
	}
	return sanitize(strings.TrimSpace(info.Name + " " + info.Version))
}

// printSubscriptions lists the open Subscribe streams.
func printSubscriptions(w io.Writer, subs []*mcpdv1.SubscriptionStatus) {
	if len(subs) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SUBSCRIPTION\tAPP\tPID\tSERVERS\tQUEUED\tDELIVERED\tCOALESCED\tDROPPED")
	for _, s := range subs {
		servers := sanitize(strings.Join(s.GetServers(), ","))
		if servers == "" {
			servers = "*"
		}
		app := dash(s.GetAppName())
		if s.GetLagged() {
			app += " (lagged)"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\t%d\n", s.GetSubscriptionId(), app, pidCell(s.GetAppPid()),
			servers, s.GetQueued(), s.GetDelivered(), s.GetCoalesced(), s.GetDropped())
	}
	tw.Flush()
}

// printInstanceRows prints a shared server's instances under its row, each
// named by its key (the app, or the workspace root).
func printInstanceRows(tw io.Writer, s *mcpdv1.ServerStatus) {
	for _, in := range s.GetInstances() {
		fmt.Fprintf(tw, "  %s %s\t%s\t%s\t%s\t%d\t%s\t%d/%d\t%d\t%d\t-\t%s\n",
			sanitize(s.GetShare()), sanitize(in.GetInstance()), stateCell(in), pidCell(in.GetPid()), uptimeCell(in), in.GetRestarts(),
			protocolCell(in), in.GetCallsInFlight(), in.GetCallsTotal(), in.GetCallsFailed(), in.GetCache().GetHits(),
			dash(lastErrorCell(in)))
	}
}
