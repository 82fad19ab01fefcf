package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// printOAuth prints the logins of the remote servers that have or need
// one: who issued the token, its scopes and expiry. Nothing when none do.
func printOAuth(w io.Writer, servers []*mcpdv1.ServerStatus) {
	var rows []*mcpdv1.ServerStatus
	for _, s := range sortedServers(servers) {
		if s.GetOauth() != nil {
			rows = append(rows, s)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tLOGIN\tISSUER\tSCOPES\tEXPIRES")
	now := timeNow()
	for _, s := range rows {
		o := s.GetOauth()
		expires := "-"
		if ms := o.GetExpiresAtUnixMs(); ms != 0 {
			left := time.UnixMilli(ms).Sub(now)
			switch {
			case left <= 0 && o.GetHasRefreshToken():
				expires = "expired (refreshable)"
			case left <= 0:
				expires = "expired"
			default:
				expires = "in " + formatDuration(left.Milliseconds())
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", sanitize(s.GetName()), loginCell(sanitize(s.GetName()), o),
			dash(sanitize(o.GetIssuer())), dash(sanitize(strings.Join(o.GetScopes(), " "))), expires)
	}
	tw.Flush()
}

func loginCell(name string, o *mcpdv1.OAuthStatus) string {
	switch {
	case o.GetLoginInProgress():
		return "login in progress"
	case o.GetLoginRequired():
		return "login required: " + sanitize(o.GetReason()) + " (run: mcpdctl login " + name + ")"
	case o.GetLoggedIn():
		return "logged in"
	default:
		return "not logged in"
	}
}
