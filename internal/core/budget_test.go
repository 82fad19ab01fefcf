package core

import (
	"context"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"go.uber.org/zap/zaptest"
)

// TestBudgetChargesWhatTheCallerAlsoHolds: an in-process call whose caller
// holds more than the request (WithAlsoHeld) is charged both, for as long
// as its handler runs, and refused when both do not fit.
func TestBudgetChargesWhatTheCallerAlsoHolds(t *testing.T) {
	srv := New(supervisor.New(supervisor.Options{}), Options{Logger: zaptest.NewLogger(t), RequestMemoryBudget: 1 << 20})
	app := srv.NewLocalApp(TransportRelay, "host", 0, 0)
	const size = 300 << 10 // the request
	for _, tc := range []struct {
		held   int64
		refuse bool
	}{{0, false}, {400 << 10, false}, {800 << 10, true}} {
		ctx := WithAlsoHeld(app.Context(context.Background()), tc.held)
		_, release, err := app.admit(ctx, size, "")
		charged := srv.budget.used.Load()
		if tc.refuse {
			if service.CodeOf(err) != service.ResourceExhausted {
				t.Errorf("also held %d: %v, want RESOURCE_EXHAUSTED", tc.held, err)
			}
			continue
		}
		release()
		if err != nil || charged != size+tc.held {
			t.Errorf("also held %d: charged %d (%v), want %d", tc.held, charged, err, size+tc.held)
		}
	}
	if used := srv.budget.used.Load(); used != 0 {
		t.Errorf("budget still holds %d bytes", used)
	}
}
