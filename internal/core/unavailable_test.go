package core

import (
	"errors"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/oauth"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// TestUnavailableReasonNamesServerOnce: a reason whose class is about the
// server is as the supervisor said it; another gets the server's name.
func TestUnavailableReasonNamesServerOnce(t *testing.T) {
	te := &supervisor.TimeoutError{Server: "x"}
	if got, want := unavailableReason("x", te), te.Error(); got != want {
		t.Errorf("timed-out call of x: %q, want %q", got, want)
	}
	if got, want := unavailableReason("y", te), `server "y" is unavailable: `+te.Error(); got != want {
		t.Errorf("another server's error: %q, want %q", got, want)
	}
	login := &oauth.LoginRequiredError{Server: "x", Reason: "no token"}
	if got, want := unavailableReason("x", login), login.Error(); got != want {
		t.Errorf("login required: %q, want %q", got, want)
	}
	if got, want := unavailableReason("x", errors.New("did not answer in time")), `server "x" is unavailable: did not answer in time`; got != want {
		t.Errorf("plain error: %q, want %q", got, want)
	}
}
