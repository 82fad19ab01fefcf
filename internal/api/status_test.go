package api

import (
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// The stdout and message counters of a server reach its ServerStatus.
func TestServerStatusCounters(t *testing.T) {
	st := supervisor.Status{Name: "s", LinesSkipped: 1, LinesOversize: 2, ResponsesDropped: 3, MessagesInvalid: 4}
	got := serverStatusToProto(serverStatusOf(st, time.Now()))
	if got.GetLinesSkipped() != 1 || got.GetLinesOversize() != 2 || got.GetResponsesDropped() != 3 || got.GetMessagesInvalid() != 4 {
		t.Fatalf("lines_skipped %d, lines_oversize %d, responses_dropped %d, messages_invalid %d; want 1, 2, 3, 4",
			got.GetLinesSkipped(), got.GetLinesOversize(), got.GetResponsesDropped(), got.GetMessagesInvalid())
	}
}
