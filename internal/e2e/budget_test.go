package e2e

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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
	dir := newDir(t)
	d := spawnDaemon(t, dir+"/run/mcpd.sock", writeConfig(t, dir, map[string]server{"s": {Mode: "legacy"}}),
		"--request-memory-budget", strconv.FormatInt(budget, 10))
	d.waitServing()
	c := d.client()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errs := make(chan error, total)
	var wg sync.WaitGroup
	for range total {
		app := mcpdv1.NewMcpdClient(d.dial()) // one connection per app
		wg.Go(func() {
			_, _, err := callTool(ctx, app, sleepReq)
			errs <- err
		})
	}
	for range total - inFlight {
		err := <-errs
		if status.Code(err) != codes.ResourceExhausted || !strings.Contains(status.Convert(err).Message(), "request memory budget") {
			t.Errorf("refused call: %v, want RESOURCE_EXHAUSTED naming the request memory budget", err)
		}
	}
	poll(t, "three calls in flight", func() (bool, error) {
		return d.serverStatus(c, "s").GetCallsInFlight() == inFlight, nil
	})
	t.Logf("mcpd peak RSS with %d MiB in flight: %s", inFlight*31, peakRSS(d.cmd.Process.Pid))
	cancel()
	wg.Wait()
	for range inFlight {
		if err := <-errs; status.Code(err) != codes.Canceled {
			t.Errorf("held call: %v, want cancelled", err)
		}
	}

	// The budget is free again, and mcpd still serves large calls.
	echo := &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", ArgumentsJson: `{"message":"after","pad":"` + pad + `"}`}
	resp, _, err := callTool(ctxT(t), c, echo)
	if err != nil {
		t.Fatalf("large call after the others: %v", err)
	}
	if got := text(t, resp); got != "after" {
		t.Errorf("echo = %q", got)
	}
}

// peakRSS is the VmHWM line of a process's status, for the test's log.
func peakRSS(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return err.Error()
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
