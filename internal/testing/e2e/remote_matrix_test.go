package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// remoteName is the remote server's name in the matrix's config.
const remoteName = "r"

// TestRemoteMatrix drives each real remote server through a real mcpd,
// over gRPC and over mcpdctl bridge with the Go SDK's client as the host:
// list, call with progress, read, subscribe and receive the update, and
// cancel a long call (the server hears of it).
func TestRemoteMatrix(t *testing.T) {
	fronts := []struct {
		name string
		run  func(t *testing.T, d *daemon, up *remoteUpstream)
	}{{"grpc", exerciseRemoteGRPC}, {"bridge", exerciseRemoteBridge}}
	for _, u := range remoteUpstreams {
		for _, front := range fronts {
			t.Run(u.name+"/"+front.name, func(t *testing.T) {
				bridgeBins(t)
				up := u.start(t)
				d := startBridgeDaemon(t, map[string]map[string]any{remoteName: up.entry})
				front.run(t, d, up)
			})
		}
	}
}

// longCalls makes the long calls of the matrix unique across subtests
// (the numbers show in the servers' logs).
var longCalls atomic.Int64

func nextLong() int { return 600000 + int(longCalls.Add(1)) }

// remoteCall calls a tool of the remote server over gRPC.
type remoteCall func(ctx context.Context, tc toolCall, meta string, opts *mcpdv1.CallOptions) (*mcpdv1.McpResponse, []string, error)

func exerciseRemoteGRPC(t *testing.T, d *daemon, up *remoteUpstream) {
	c := d.client()
	lt, err := c.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{Server: remoteName})
	if err != nil {
		t.Fatal(err)
	}
	checkToolNames(t, lt.GetServers()[0].GetItemsJson(), up.tools)
	if st := d.serverStatus(c, remoteName); st.GetEra() != up.era || st.GetState() != mcpdv1.ServerState_SERVER_STATE_READY {
		t.Errorf("status: state %v era %q, want ready %q", st.GetState(), st.GetEra(), up.era)
	}
	call := func(ctx context.Context, tc toolCall, meta string, opts *mcpdv1.CallOptions) (*mcpdv1.McpResponse, []string, error) {
		args, _ := json.Marshal(tc.args)
		return callTool(ctx, c, &mcpdv1.CallToolRequest{Server: remoteName, Tool: tc.name, ArgumentsJson: string(args), MetaJson: meta, Options: opts})
	}
	echoGRPC(t, call, up, "hé grpc")

	up.settle(t)
	_, progress, err := call(ctxT(t), up.progress, `{"progressToken":"grpc-token"}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(progress) != up.progressSteps || !strings.Contains(progress[0], `"grpc-token"`) {
		t.Errorf("progress events %q: want %d with the app's own token", progress, up.progressSteps)
	}

	rr, err := c.ReadResource(ctxT(t), &mcpdv1.ReadResourceRequest{Server: remoteName, Uri: up.resource})
	if err != nil || !strings.Contains(rr.GetResultJson(), up.resourceText) {
		t.Errorf("read %s = %v, %v", up.resource, rr, err)
	}

	sub := openSub(t, d, &mcpdv1.SubscribeRequest{Servers: []string{remoteName}, ResourceUris: []string{up.resource}})
	if s := sub.ack.GetServers(); len(s) != 1 || !slices.Contains(s[0].GetResourceUris(), up.resource) {
		t.Errorf("ack %v: want %s accepted", sub.ack, up.resource)
	}
	awaitUpdate(t, up, func(tc toolCall) { call(ctxT(t), tc, "", nil) }, func() bool {
		return sub.find(func(ev *mcpdv1.SubscriptionEvent) bool {
			return ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED && ev.GetUri() == up.resource
		}) != nil
	})

	cancelGRPC(t, call, up)
	echoGRPC(t, call, up, "après")
}

func echoGRPC(t *testing.T, call remoteCall, up *remoteUpstream, msg string) {
	t.Helper()
	resp, _, err := call(ctxT(t), toolCall{"echo", map[string]any{"message": msg}}, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, resp); got != up.echoPrefix+msg {
		t.Errorf("echo = %q, want %q", got, up.echoPrefix+msg)
	}
}

// cancelGRPC ends two long calls early, the app's cancellation and the
// call's own timeout_ms: each ends with its code, and the server hears of
// each.
func cancelGRPC(t *testing.T, call remoteCall, up *remoteUpstream) {
	n := nextLong()
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		_, _, err := call(ctx, up.long(n), "", nil)
		done <- err
	}()
	up.started(t, n)
	cancel()
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Errorf("cancelled call ended with %v, want Canceled", err)
	}
	up.cancelled(t, n)

	n = nextLong()
	if _, _, err := call(ctxT(t), up.long(n), "", &mcpdv1.CallOptions{TimeoutMs: 3000}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("call past its timeout_ms ended with %v, want DeadlineExceeded", err)
	}
	up.started(t, n)
	up.cancelled(t, n)
}

// awaitUpdate makes the server announce an update of its resource with
// call until updated reports it arrived (once, for a server whose update
// tool toggles periodic updates).
func awaitUpdate(t *testing.T, up *remoteUpstream, call func(toolCall), updated func() bool) {
	t.Helper()
	var last time.Time
	poll(t, "notifications/resources/updated for "+up.resource, func() (bool, error) {
		if updated() {
			return true, nil
		}
		if last.IsZero() || (!up.updateOnce && time.Since(last) > 200*time.Millisecond) {
			call(up.update)
			last = time.Now()
		}
		return false, nil
	})
}

// received reports whether uri came on updates, taking what is there.
func received(updates <-chan string, uri string) func() bool {
	return func() bool {
		for {
			select {
			case u := <-updates:
				if u == uri {
					return true
				}
			default:
				return false
			}
		}
	}
}

// checkToolNames checks that a JSON array of tools names each of want.
func checkToolNames(t *testing.T, itemsJSON string, want []string) {
	t.Helper()
	var tools []struct{ Name string }
	if err := json.Unmarshal([]byte(itemsJSON), &tools); err != nil {
		t.Fatalf("tools %s: %v", itemsJSON, err)
	}
	got := names(tools, func(tl struct{ Name string }) string { return tl.Name })
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("tools %v lack %s", got, w)
		}
	}
}

func exerciseRemoteBridge(t *testing.T, d *daemon, up *remoteUpstream) {
	cs, rec := goHost(t, d, "remote-host", false, remoteName)
	lt, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	items, _ := json.Marshal(lt.Tools)
	checkToolNames(t, string(items), up.tools)
	if got := callText(t, cs, "echo", map[string]any{"message": "hé bridge"}); got != up.echoPrefix+"hé bridge" {
		t.Errorf("echo = %q", got)
	}

	up.settle(t)
	params := &mcp.CallToolParams{Name: up.progress.name, Arguments: up.progress.args}
	params.SetProgressToken("bridge-token")
	if _, err := cs.CallTool(ctxT(t), params); err != nil {
		t.Fatal(err)
	}
	poll(t, itoa(up.progressSteps)+" progress notifications", func() (bool, error) {
		return rec.progress.Load() >= int64(up.progressSteps), nil
	})

	rr, err := cs.ReadResource(ctxT(t), &mcp.ReadResourceParams{URI: up.resource})
	if err != nil || len(rr.Contents) == 0 || !strings.Contains(rr.Contents[0].Text, up.resourceText) {
		t.Errorf("read %s = %+v, %v", up.resource, rr, err)
	}

	if err := cs.Subscribe(ctxT(t), &mcp.SubscribeParams{URI: up.resource}); err != nil {
		t.Fatal(err)
	}
	awaitUpdate(t, up, func(tc toolCall) { callText(t, cs, tc.name, tc.args) }, received(rec.updates, up.resource))

	// The host cancels: the bridge passes it on, the server hears of it.
	n := nextLong()
	ctx, cancel := context.WithCancel(ctxT(t))
	done := make(chan error, 1)
	go func() {
		long := up.long(n)
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: long.name, Arguments: long.args})
		done <- err
	}()
	up.started(t, n)
	cancel()
	if err := <-done; err == nil {
		t.Error("cancelled call succeeded")
	}
	up.cancelled(t, n)
	if got := callText(t, cs, "echo", map[string]any{"message": "après"}); got != up.echoPrefix+"après" {
		t.Errorf("echo after the cancel = %q", got)
	}
}
