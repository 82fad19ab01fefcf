package api

import (
	"testing"

	"github.com/mcpd-dev/mcpd/internal/service"
)

// The stdout and message counters of a server reach its ServerStatus.
func TestServerStatusCounters(t *testing.T) {
	got := serverStatusToProto(service.ServerStatus{Name: "s", LinesSkipped: 1, LinesOversize: 2, ResponsesDropped: 3, MessagesInvalid: 4})
	if got.GetLinesSkipped() != 1 || got.GetLinesOversize() != 2 || got.GetResponsesDropped() != 3 || got.GetMessagesInvalid() != 4 {
		t.Fatalf("lines_skipped %d, lines_oversize %d, responses_dropped %d, messages_invalid %d; want 1, 2, 3, 4",
			got.GetLinesSkipped(), got.GetLinesOversize(), got.GetResponsesDropped(), got.GetMessagesInvalid())
	}
}
