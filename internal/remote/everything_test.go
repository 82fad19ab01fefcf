package remote_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/servers/upstream"
)

// everythingExercise lists, calls with progress, and reads.
func everythingExercise(t *testing.T, c *client) {
	t.Helper()
	if !strings.Contains(string(c.mustCall(t, "tools/list", `{}`)), `"trigger-long-running-operation"`) {
		t.Fatal("tools/list lacks trigger-long-running-operation")
	}
	if r := c.mustCall(t, "tools/call", `{"name":"echo","arguments":{"message":"hé"}}`); !strings.Contains(string(r), "hé") {
		t.Fatalf("echo: %s", r)
	}
	var mu sync.Mutex
	n := 0
	resp, err := c.call(t, 20*time.Second, "tools/call",
		`{"name":"trigger-long-running-operation","arguments":{"duration":0.3,"steps":3},"_meta":{"progressToken":7}}`,
		func(p json.RawMessage) {
			mu.Lock()
			n++
			mu.Unlock()
		})
	if err != nil || resp.Error != nil {
		t.Fatalf("long-running operation: %v %v", err, resp)
	}
	mu.Lock()
	defer mu.Unlock()
	if n != 3 {
		t.Errorf("%d progress notifications, want 3", n)
	}
	if r := c.mustCall(t, "resources/templates/list", `{}`); len(r) == 0 {
		t.Fatal("resources/templates/list: empty")
	}
}

func TestServerEverythingSSE(t *testing.T) {
	_, base := upstream.Everything(t, "sse")
	c := connect(t, remote.Options{URL: base + "/sse", Type: remote.TypeSSE}, session.ProtocolAuto)
	everythingExercise(t, c)
}

func TestServerEverythingStreamableHTTP(t *testing.T) {
	_, base := upstream.Everything(t, "streamableHttp")
	c := connect(t, remote.Options{URL: base + "/mcp"}, session.ProtocolAuto)
	everythingExercise(t, c)
}
