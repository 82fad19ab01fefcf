package bridge

import (
	"errors"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// TestMissingServerNamedOnce: the warning for a missing server names it
// once, whichever way mcpd said why.
func TestMissingServerNamedOnce(t *testing.T) {
	classed := service.NewError(service.ServerUnavailable, map[string]string{service.MetaServer: "x"}, `server "x" is crash-looping`)
	for what, tc := range map[string]struct{ reason, want string }{
		"classed as about x": {failedReason("x", classed), `server "x" is crash-looping`},
		"another's":          {failedReason("y", classed), `server "y" is unavailable: server "x" is crash-looping`},
		"unclassed":          {failedReason("x", errors.New("boom")), `server "x" is unavailable: boom`},
		"an event's state":   {downReason("x", "crash_loop"), `server "x" is unavailable (crash_loop)`},
	} {
		want := tc.want + "; its tools, prompts and resources are missing until it runs again"
		if got := missingMessage(tc.reason); got != want {
			t.Errorf("%s: %q, want %q", what, got, want)
		}
	}
}
