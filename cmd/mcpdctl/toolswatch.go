package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// printToolChanges prints a line per server with tool changes pending.
func printToolChanges(w io.Writer, servers []*mcpdv1.ServerStatus) {
	for _, s := range sortedServers(servers) {
		if n := s.GetToolChangesPending(); n > 0 {
			fmt.Fprintf(w, "%s: %d tool change(s) pending approval; review: mcpdctl tools diff %s\n",
				sanitize(s.GetName()), n, sanitize(s.GetName()))
		}
	}
}

// watchPins follows a tools list change or a server becoming ready with
// the server's pending tool changes, when it has any.
func (c *cli) watchPins(ctx context.Context, client mcpdv1.McpdClient, ev *mcpdv1.SubscriptionEvent) {
	switch {
	case ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED,
		ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE && ev.GetState() == "ready":
	default:
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := client.GetToolChanges(ctx, &mcpdv1.GetToolChangesRequest{Server: ev.GetServer()})
	if err != nil || len(resp.GetChanges()) == 0 {
		return
	}
	var parts []string
	for _, ch := range resp.GetChanges() {
		parts = append(parts, ch.GetTool()+" ("+ch.GetKind()+")")
	}
	fmt.Fprintln(c.stdout, sanitize(fmt.Sprintf("%s %s tool changes pending approval (pin %q): %s; review: mcpdctl tools diff %s",
		time.Now().Format("15:04:05.000"), ev.GetServer(), resp.GetPinMode(), strings.Join(parts, ", "), ev.GetServer())))
}
