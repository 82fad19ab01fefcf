package core

import (
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// The stdout and message counters of a server reach its ServerStatus.
func TestServerStatusCounters(t *testing.T) {
	st := supervisor.Status{Name: "s", LinesSkipped: 1, LinesOversize: 2, ResponsesDropped: 3, MessagesInvalid: 4}
	got := serverStatusOf(st, time.Now())
	if got.LinesSkipped != 1 || got.LinesOversize != 2 || got.ResponsesDropped != 3 || got.MessagesInvalid != 4 {
		t.Fatalf("lines skipped %d, oversize %d, responses dropped %d, messages invalid %d; want 1, 2, 3, 4",
			got.LinesSkipped, got.LinesOversize, got.ResponsesDropped, got.MessagesInvalid)
	}
}
