package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestRawSubscribeRequestsRefused: app A watches a URI of a legacy server
// through Subscribe; app B's raw resources/unsubscribe (and subscribe) via
// SendRequest is refused, never reaches the child, and A's subscription
// still delivers the next update.
func TestRawSubscribeRequestsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	const uri = "fake://hello"
	d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{fakeSpec("s", "legacy")}})
	ca, _ := d.dial()
	cb, _ := d.dial()
	a, _ := subscribe(t, ca, &mcpdv1.SubscribeRequest{Servers: []string{"s"}, ResourceUris: []string{uri}}, true)
	if acks := a.ack.GetServers(); len(acks) != 1 || len(acks[0].GetResourceUris()) != 1 {
		t.Fatalf("ack = %v, want the URI accepted", acks)
	}

	for _, method := range []string{"resources/unsubscribe", "resources/subscribe"} {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		stream, err := cb.SendRequest(ctx, &mcpdv1.SendRequestRequest{Server: "s", Method: method, ParamsJson: `{"uri":"` + uri + `"}`})
		if err == nil {
			_, err = stream.Recv()
		}
		cancel()
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "use the Subscribe") {
			t.Fatalf("raw %s = %v, want INVALID_ARGUMENT pointing to the Subscribe RPC", method, err)
		}
	}
	d.flushStderr("s", "tools/list")
	if n := d.stderrCount("s", "recv resources/unsubscribe"); n != 0 {
		t.Fatalf("child saw %d resources/unsubscribe, want 0", n)
	}
	if n := d.stderrCount("s", "recv resources/subscribe"); n != 1 {
		t.Fatalf("child saw %d resources/subscribe, want A's one", n)
	}

	d.callTool("s", "changed", `{"uri":"`+uri+`"}`)
	waitFor(t, "A's update", func() bool { return a.count(realUpdate(uri)) == 1 })
}
