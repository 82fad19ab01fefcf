package e2e

import (
	"fmt"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The last app leaves (the listen is cancelled) and another subscribes at
// once (a new listen on the same child): the new app gets the updates.
// The go-sdk server keeps one registration per session, so the cancelled
// listen's cleanup must not land after the new listen registered (it
// would drop the new registration too): mcpd waits for the cancelled
// listen to close before it opens the next one. (The race is timing
// dependent: this test exercises the path; it fails only when the cleanup
// lands late, as it did under load in mcpd-bench's fan-out section.)
func TestModernLeaveThenResubscribe(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test")
	}
	d := newDaemon(t, supervisor.Options{Specs: []supervisor.Spec{gosdkSpec(t, "g")}})
	c, _ := d.dial()
	req := &mcpdv1.SubscribeRequest{Servers: []string{"g"}, ResourceUris: []string{"test://a"}}
	const rounds = 30
	for i := range rounds {
		w, _ := subscribe(t, c, req, true)
		d.callTool("g", "touch", `{"uri":"test://a"}`)
		waitFor(t, fmt.Sprintf("round %d: the update", i), func() bool { return w.count(realUpdate("test://a")) == 1 })
		w.close() // the only app leaves: its listen is cancelled; the next round subscribes at once
	}
	if n := d.stderrCount("g", "recv notifications/cancelled"); n == 0 {
		t.Fatal("no listen was ever cancelled: the test did not exercise leaving")
	}
}
