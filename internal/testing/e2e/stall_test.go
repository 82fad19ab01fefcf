package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Apps whose only deadline is their gRPC one get DEADLINE_EXCEEDED at it
// from a server that stopped reading its stdin, mcpd's handlers let go of
// them (calls in flight drop to 0 long before stdinTimeout would free
// them), and the server is then restarted as hung.
func TestStuckStdinHoldsNoGRPCCall(t *testing.T) {
	skipShort(t)
	const (
		deadline     = 2 * time.Second
		stdinTimeout = 6 * time.Second
		calls        = 12
	)
	d := startDaemon(t, map[string]server{"stuck": {Mode: "legacy,quiet", Autostart: true, StdinTimeout: "6s"}})
	c := d.client()
	poll(t, "the server to be ready", func() (bool, error) {
		return d.serverStatus(c, "stuck").GetState() == mcpdv1.ServerState_SERVER_STATE_READY, nil
	})
	old := d.serverStatus(c, "stuck").GetPid()
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "stuck", Tool: "stallstdin"})
	if err != nil || text(t, resp) != "stalled" {
		t.Fatalf("stallstdin: %v %v", resp, err)
	}

	start := time.Now()
	big := echoArgs(strings.Repeat("x", 16<<10)) // 12 of them overfill the pipe
	codesSeen := make(chan codes.Code, calls)
	var wg sync.WaitGroup
	for range calls {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			_, _, err := callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "stuck", Tool: "echo", ArgumentsJson: big})
			codesSeen <- status.Code(err)
		})
	}
	wg.Wait()
	close(codesSeen)
	for code := range codesSeen {
		if code != codes.DeadlineExceeded {
			t.Errorf("call ended with %v, want DeadlineExceeded", code)
		}
	}
	poll(t, "calls in flight to drop to 0", func() (bool, error) {
		return d.serverStatus(c, "stuck").GetCallsInFlight() == 0, nil
	})
	if took := time.Since(start); took >= stdinTimeout-time.Second {
		t.Errorf("calls in flight dropped to 0 after %s: the handlers waited for the server, not their deadline", took)
	}

	poll(t, "the hung server to be restarted", func() (bool, error) {
		st := d.serverStatus(c, "stuck")
		return st.GetRestarts() >= 1 && st.GetPid() != old && st.GetState() == mcpdv1.ServerState_SERVER_STATE_READY, nil
	})
	if log := d.stderr.String(); !strings.Contains(log, `stopped reading its stdin for 6s`) {
		t.Errorf("mcpd's log does not say the server stopped reading its stdin:\n%s", log)
	}
}
