package e2e

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestEightLargeRequestsAgainstTheBudget: eight 31 MiB tool calls at once
// against a request memory budget that holds three. Three reach the child
// (which holds them, sleeping), the other five are refused with
// RESOURCE_EXHAUSTED naming the budget; mcpd stays up, and once the three
// are cancelled the budget is free for the next large call.
func TestEightLargeRequestsAgainstTheBudget(t *testing.T) {
	skipShort(t)
	const (
		inFlight = 3
		total    = 8
	)
	pad := strings.Repeat("p", 31<<20)
	sleepReq := &mcpdv1.CallToolRequest{Server: "s", Tool: "sleep", ArgumentsJson: `{"ms":600000,"pad":"` + pad + `"}`,
		Options: &mcpdv1.CallOptions{TimeoutMs: 600000}}
	budget := int64(inFlight*len(sleepReq.GetArgumentsJson())) + 16<<20 // three, not four
	dir := tempdir.Short(t)
	d := spawnDaemon(t, dir+"/run/mcpd.sock", writeConfig(t, dir, map[string]server{
		// A race-built child on a loaded machine can take over the default
		// 10s to read 31 MiB lines; this test is of the budget, not of the
		// stall detection that would kill it for that.
		"s": {Mode: "legacy", StdinTimeout: "3m"}}),
		"--request-memory-budget", strconv.FormatInt(budget, 10))
	d.waitServing()
	c := d.client()

	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, total)
	var wg sync.WaitGroup
	defer wg.Wait() // after cancel, also when the test fails early
	defer cancel()
	for range total {
		app := mcpdv1.NewMcpdClient(d.dial()) // one connection per app
		wg.Go(func() {
			_, _, err := callTool(ctx, app, sleepReq)
			errs <- err
		})
	}
	for i := range total - inFlight {
		var err error
		select {
		case err = <-errs:
		// A budget not enforced admits them all; 31 MiB requests through a
		// -race build on a loaded machine take a while to arrive.
		case <-time.After(3 * time.Minute):
			t.Fatalf("only %d of %d calls were refused", i, total-inFlight)
		}
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "request memory budget") {
			t.Errorf("refused call: %v, want RESOURCE_EXHAUSTED naming the request memory budget", err)
		}
	}
	poll(t, "three calls in flight", func() (bool, error) {
		return d.serverStatus(c, "s").GetCallsInFlight() == inFlight, nil
	})
	cancel()
	wg.Wait()
	for range inFlight {
		if err := <-errs; status.Code(err) != codes.Canceled {
			t.Errorf("held call: %v, want cancelled", err)
		}
	}

	// The budget is free again, and mcpd still serves large calls.
	echo := &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", ArgumentsJson: `{"message":"after","pad":"` + pad + `"}`}
	// A generous bound: 31 MiB through a -race build under load is slow.
	after, cancelAfter := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancelAfter()
	resp, _, err := callTool(after, c, echo)
	if err != nil {
		t.Fatalf("large call after the others: %v", err)
	}
	if got := text(t, resp); got != "after" {
		t.Errorf("echo = %q", got)
	}
}
