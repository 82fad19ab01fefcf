package e2e

import (
	"context"
	"sync"
	"testing"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// registerHost registers a Host stream on c declaring roots and sampling as
// given, answering every call it gets with result; it ends with the test.
func registerHost(t *testing.T, c mcpdv1.McpdClient, roots bool, result string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // also on the Fatal paths below
	stream, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := &mcpdv1.HostRegistration{Roots: roots, Sampling: true}
	if err := stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: reg}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("registration: %v", err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				return
			}
			if call := msg.GetCall(); call != nil {
				_ = stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Answer{Answer: &mcpdv1.HostAnswer{
					CallId: call.GetCallId(), ResultJson: result}}})
			}
		}
	})
	t.Cleanup(func() {
		_ = stream.CloseSend()
		cancel()
		wg.Wait()
	})
}

// A legacy child's roots/list through the real daemon: the configured roots
// with no host, or with a host that does not declare roots; the host's own
// answer when one declares them.
func TestDaemonAnswersRootsNoHostAnswers(t *testing.T) {
	skipShort(t)
	srv := fakeServer("legacy")
	srv["roots"] = []string{"/srv/work", "file:///data"}
	d := startBridgeDaemon(t, map[string]map[string]any{"f": srv})
	const configured = `{"roots":[{"uri":"file:///srv/work","name":"work"},{"uri":"file:///data","name":"data"}]}`
	ask := func(t *testing.T, c mcpdv1.McpdClient) string {
		t.Helper()
		resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "f", Tool: "roots", ArgumentsJson: "{}"})
		if err != nil {
			t.Fatal(err)
		}
		return text(t, resp)
	}
	t.Run("no host", func(t *testing.T) {
		if got := ask(t, d.client()); got != configured {
			t.Errorf("roots = %s, want %s", got, configured)
		}
	})
	t.Run("host without roots", func(t *testing.T) {
		c := d.client()
		registerHost(t, c, false, `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`)
		if got := ask(t, c); got != configured {
			t.Errorf("roots = %s, want %s", got, configured)
		}
	})
	t.Run("host with roots", func(t *testing.T) {
		c := d.client()
		registerHost(t, c, true, `{"roots":[{"uri":"file:///host/ws","name":"ws"}]}`)
		if got := ask(t, c); got != `{"roots":[{"uri":"file:///host/ws","name":"ws"}]}` {
			t.Errorf("roots = %s, want the host's", got)
		}
	})
	if st := d.serverStatus(d.client(), "f"); st.GetLastError() != "" {
		t.Errorf("last error = %q, want none", st.GetLastError())
	}
}
