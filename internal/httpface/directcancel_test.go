package httpface

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// The caller's cancellation ends a direct call with CANCELED, as on a
// stream, and reaches the child.
func TestDirectCancel(t *testing.T) {
	_, be := newDaemon(t)
	ctx := ctxT(t)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { // owned: its result is waited for below
		_, _, err := callDirect(cctx, be, "sleep", `{"ms":60000}`)
		done <- err
	}()
	statsCalls := 0
	waitFor(t, "the sleep call in flight", func() bool {
		statsCalls++
		_, resp, _ := callDirect(ctx, be, "stats", `{}`)
		var stats struct{ Methods map[string]int }
		_ = json.Unmarshal([]byte(directText(t, resp)), &stats)
		return stats.Methods["tools/call"] > statsCalls // the stats calls and the sleep
	})
	cancel()
	if err := <-done; service.CodeOf(err) != service.Canceled {
		t.Fatalf("direct call after cancel = %v, want CANCELED", err)
	}
	waitFor(t, "the child to see notifications/cancelled", func() bool {
		_, resp, _ := callDirect(ctx, be, "stats", `{}`)
		var stats struct{ Cancelled []json.RawMessage }
		_ = json.Unmarshal([]byte(directText(t, resp)), &stats)
		return len(stats.Cancelled) > 0
	})
}
