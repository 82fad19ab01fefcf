package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// countersMcpd answers GetStatus with one server whose stdout and message
// counters are all set.
type countersMcpd struct {
	mcpdv1.UnimplementedMcpdServer
}

func (countersMcpd) GetStatus(context.Context, *mcpdv1.GetStatusRequest) (*mcpdv1.GetStatusResponse, error) {
	return &mcpdv1.GetStatusResponse{Servers: []*mcpdv1.ServerStatus{{
		Name: "noisy", State: mcpdv1.ServerState_SERVER_STATE_READY, Pid: 42,
		LinesSkipped: 1, LinesOversize: 2, ResponsesDropped: 3, MessagesInvalid: 4,
	}}}, nil
}

// status --json carries every counter of a server.
func TestStatusJSONCounters(t *testing.T) {
	sock := mcpdtest.Serve(t, countersMcpd{})
	r := mcpdctl(t, "--socket", sock, "status", "--json")
	if r.code != exitOK {
		t.Fatalf("status --json: exit %d, stderr %s", r.code, r.stderr)
	}
	var out struct {
		Servers []map[string]json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.Servers) != 1 {
		t.Fatalf("status --json output %s: %v", r.stdout, err)
	}
	want := map[string]string{"lines_skipped": "1", "lines_oversize": "2", "responses_dropped": "3", "messages_invalid": "4"}
	for k, v := range want {
		if got := string(out.Servers[0][k]); got != v {
			t.Errorf("%s = %q, want %s", k, got, v)
		}
	}
}
