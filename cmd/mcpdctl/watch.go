package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

var watchCmd = &command{
	name:     "watch",
	synopsis: "[NAME...] [--uri URI]... [--json]",
	short:    "print change, resource, state and log events as they happen",
	long: `Watches the named servers (default: every enabled server) and prints one
event a line until Ctrl-C: tools/prompts/resources list
changes, server state changes, log messages and, with --uri (needs a NAME),
updates of those resources. It first prints each watched server's state
at once; then a line says what each server agreed to deliver (once every
server is subscribed, which waits for a server still starting). Watching
a server keeps it running: it is started if needed and restarted after a
crash. A config reload prints "NAME added" for a server
it adds (watched from then on when no NAME was given) and "NAME removed" for
a watched server it removes. --json prints each event as one JSON object.`,
	maxArgs:  -1,
	setup:    watchSetup,
	complete: completeServers,
}

func watchSetup(fs *pflag.FlagSet) runFunc {
	uris := fs.StringArray("uri", nil, "also watch updates of resource `URI` (repeatable; needs a NAME)")
	asJSON := fs.Bool("json", false, "print each event as one JSON object a line")
	// --timeout bounds only the wait for the acknowledgement: the events
	// then flow until interrupted.
	timeout := fs.Duration("timeout", 30*time.Second,
		"give up if mcpd has not acknowledged the subscription within this long; 0 means no limit")
	return func(ctx context.Context, c *cli, cmd *command, names []string) error {
		return c.runWatch(ctx, cmd, names, *uris, *asJSON, *timeout)
	}
}

func (c *cli) runWatch(ctx context.Context, cmd *command, names, uris []string, asJSON bool, timeout time.Duration) error {
	if len(uris) > 0 && len(names) == 0 {
		return &usageError{cmd: cmd, msg: "--uri needs at least one server NAME"}
	}
	ctx, cancel := c.withTimeout(ctx, 0) // until interrupted
	defer cancel()
	ctx, giveUp := context.WithCancelCause(ctx)
	defer giveUp(nil)
	stopTimer := func() {}
	errNoAck := fmt.Errorf("mcpd did not acknowledge the subscription within %s", timeout)
	if timeout > 0 {
		t := time.AfterFunc(timeout, func() { giveUp(errNoAck) })
		defer t.Stop()
		stopTimer = func() { t.Stop() } // at the first event
	}
	client, err := c.connect()
	if err != nil {
		return err
	}
	server := ""
	if len(names) == 1 {
		server = names[0]
	}
	stream, err := client.Subscribe(ctx, &mcpdv1.SubscribeRequest{
		Servers:              names,
		ToolsListChanged:     true,
		PromptsListChanged:   true,
		ResourcesListChanged: true,
		ResourceUris:         uris,
		ServerState:          true,
		LogMessages:          true,
		Client:               c.callOptions().GetClient(),
	})
	if err != nil {
		return c.rpcError(ctx, err, server)
	}
	if err := c.printCurrent(ctx, client, names, asJSON); err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if err == nil {
			stopTimer()
		}
		if err != nil {
			if errors.Is(context.Cause(ctx), errNoAck) {
				return errNoAck
			}
			if ctx.Err() != nil && (errors.Is(ctx.Err(), context.Canceled) || status.Code(err) == codes.Canceled) {
				return nil // Ctrl-C
			}
			if err == io.EOF {
				return errors.New("mcpd ended the subscription (events were lost: run watch again to resync)")
			}
			return c.rpcError(ctx, err, server)
		}
		if err := c.printEvent(ev, asJSON); err != nil {
			return err
		}
		if !asJSON {
			c.watchPins(ctx, client, ev) // toolswatch.go
		}
	}
}

// printEvent prints one event: a line of text, or with asJSON one object.
func (c *cli) printEvent(ev *mcpdv1.SubscriptionEvent, asJSON bool) error {
	if !asJSON {
		fmt.Fprintln(c.stdout, sanitize(formatEvent(ev))) // events quote servers and apps
		return nil
	}
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(ev)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "%s\n", b)
	return nil
}

// printCurrent prints the state the watched servers (names, or every
// enabled server) are in now, as SERVER_STATE events, before anything
// else: mcpd acknowledges the subscription only once every server is
// subscribed, which waits out a slow server's start. When mcpd cannot list
// the servers nothing is printed; the stream then says what is wrong.
func (c *cli) printCurrent(ctx context.Context, client mcpdv1.McpdClient, names []string, asJSON bool) error {
	resp, err := client.ListServers(ctx, &mcpdv1.ListServersRequest{})
	if err != nil {
		return nil
	}
	now := time.Now().UnixMilli()
	for _, s := range resp.GetServers() {
		if len(names) > 0 && !slices.Contains(names, s.GetName()) || len(names) == 0 && s.GetDisabled() {
			continue
		}
		ev := &mcpdv1.SubscriptionEvent{Kind: mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE,
			Server: s.GetName(), State: stateName(s.GetState()), Pid: s.GetPid(), TimeUnixMs: now}
		if err := c.printEvent(ev, asJSON); err != nil {
			return err
		}
	}
	return nil
}

// formatEvent renders one event as a line: time, server, what happened.
func formatEvent(ev *mcpdv1.SubscriptionEvent) string {
	t := time.UnixMilli(ev.GetTimeUnixMs()).Format("15:04:05.000")
	if ev.GetTimeUnixMs() == 0 {
		t = time.Now().Format("15:04:05.000")
	}
	synthetic := ""
	if ev.GetSynthetic() {
		synthetic = " (after restart)"
	}
	switch ev.GetKind() {
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK:
		var parts []string
		for _, a := range ev.GetAck().GetServers() {
			if a.GetError() != "" {
				parts = append(parts, fmt.Sprintf("%s: unavailable (%s)", a.GetServer(), a.GetError()))
				continue
			}
			var kinds []string
			for _, k := range []struct {
				on   bool
				name string
			}{{a.GetToolsListChanged(), "tools"}, {a.GetPromptsListChanged(), "prompts"},
				{a.GetResourcesListChanged(), "resources"}, {a.GetServerState(), "state"}, {a.GetLogMessages(), "logs"}} {
				if k.on {
					kinds = append(kinds, k.name)
				}
			}
			kinds = append(kinds, a.GetResourceUris()...)
			parts = append(parts, fmt.Sprintf("%s: %s", a.GetServer(), strings.Join(kinds, " ")))
		}
		return fmt.Sprintf("%s watching %s", t, strings.Join(parts, "; "))
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_TOOLS_LIST_CHANGED:
		return fmt.Sprintf("%s %s tools changed%s", t, ev.GetServer(), synthetic)
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_PROMPTS_LIST_CHANGED:
		return fmt.Sprintf("%s %s prompts changed%s", t, ev.GetServer(), synthetic)
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCES_LIST_CHANGED:
		return fmt.Sprintf("%s %s resources changed%s", t, ev.GetServer(), synthetic)
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED:
		return fmt.Sprintf("%s %s updated %s%s", t, ev.GetServer(), ev.GetUri(), synthetic)
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_SERVER_STATE:
		line := fmt.Sprintf("%s %s %s", t, ev.GetServer(), ev.GetState())
		if ev.GetPid() != 0 {
			line += fmt.Sprintf(" pid %d", ev.GetPid())
		}
		if ev.GetExit() != "" {
			line += " (" + ev.GetExit() + ")"
		}
		if ev.GetError() != "" && ev.GetState() != "exited" {
			line += ": " + ev.GetError()
		}
		return line
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOG_MESSAGE:
		return fmt.Sprintf("%s %s log %s", t, ev.GetServer(), ev.GetParamsJson())
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESTARTED:
		return fmt.Sprintf("%s %s restarted pid %d (subscriptions re-sent)", t, ev.GetServer(), ev.GetPid())
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LAGGED:
		return fmt.Sprintf("%s lagged: %s", t, ev.GetError())
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ERROR:
		return fmt.Sprintf("%s error: %s", t, ev.GetError())
	case mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOGS_LAGGED:
		return fmt.Sprintf("%s %s logs lagged: %d log messages dropped (read too slowly)", t, ev.GetServer(), ev.GetDroppedLogMessages())
	}
	return fmt.Sprintf("%s %s %s", t, ev.GetServer(), ev.GetKind())
}
