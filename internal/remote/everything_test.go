package remote_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// everythingJS is server-everything's entry point in the repository's
// node_modules.
func everythingJS(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	p := filepath.Join(filepath.Dir(file), "..", "..", "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(p); err != nil {
		t.Skipf("server-everything not installed: %v", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node not installed")
	}
	return p
}

// startEverything runs server-everything in mode (sse or streamableHttp)
// on a free port and returns its base URL once it listens.
func startEverything(t *testing.T, mode string) (string, *server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &server{cmd: exec.Command("node", everythingJS(t), mode), cond: make(chan struct{}), done: make(chan struct{})}
	s.cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	startProcess(t, s)
	s.waitStderr(t, fmt.Sprintf("port %d", port))
	return fmt.Sprintf("http://127.0.0.1:%d", port), s
}

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
	base, _ := startEverything(t, "sse")
	c := connect(t, remote.Options{URL: base + "/sse", Type: remote.TypeSSE}, session.ProtocolAuto)
	everythingExercise(t, c)
}

func TestServerEverythingStreamableHTTP(t *testing.T) {
	base, _ := startEverything(t, "streamableHttp")
	c := connect(t, remote.Options{URL: base + "/mcp"}, session.ProtocolAuto)
	everythingExercise(t, c)
}
