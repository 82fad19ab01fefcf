package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// rawHost is an MCP host speaking newline-delimited JSON-RPC to a bridge
// process by hand.
type rawHost struct {
	in  io.WriteCloser
	out *bufio.Reader
}

func (h *rawHost) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		t.Fatalf("write to the bridge: %v", err)
	}
}

// reply reads lines until the response to id, skipping notifications.
func (h *rawHost) reply(t *testing.T, id string) *jsonrpc.Message {
	t.Helper()
	for {
		line, err := h.out.ReadBytes('\n')
		if err != nil {
			t.Fatalf("read from the bridge: %v", err)
		}
		var m jsonrpc.Message
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("bridge wrote %q: %v", line, err)
		}
		if string(m.ID) == id {
			return &m
		}
	}
}

// pipeBridge starts cmd, a bridge, with its stdin and stdout piped to the
// test; when the test ends, its stdin is closed and it is waited for.
func pipeBridge(t *testing.T, cmd *exec.Cmd) (io.WriteCloser, io.Reader) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		cmd.Wait()
	})
	return in, out
}

// Through the relay, a line over --max-line-size gets the bridge's own
// invalid-request error and the session goes on; a large request and its
// large answer pass whole.
func TestBridgeRelayLongLines(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	in, out := pipeBridge(t, bridgeCommand(d, "--max-line-size", "4194304", "g"))
	h := &rawHost{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := h.reply(t, "1"); m.Error != nil {
		t.Fatalf("initialize: %v", m.Error)
	}
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	over := strings.Repeat("o", 4<<20)
	h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, over))
	if m := h.reply(t, "2"); m.Error == nil || m.Error.Code != jsonrpc.CodeInvalidRequest || !strings.Contains(m.Error.Message, "--max-line-size") {
		t.Fatalf("oversize line: %s %v, want an invalid-request error naming --max-line-size", m.Result, m.Error)
	}

	big := strings.Repeat("b", 3<<20)
	h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":%q}}}`, big))
	m := h.reply(t, "3")
	if m.Error != nil {
		t.Fatalf("3 MiB echo: %v", m.Error)
	}
	if !strings.Contains(string(m.Result), big) {
		t.Fatalf("3 MiB echo: result of %d bytes does not carry the message", len(m.Result))
	}
	h.send(t, `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"after"}}}`)
	if m := h.reply(t, "4"); m.Error != nil || !strings.Contains(string(m.Result), "after") {
		t.Fatalf("echo after: %s %v", m.Result, m.Error)
	}
	if got := appsByTransport(t, d)["relay"]; len(got) != 1 {
		t.Errorf("relay apps = %q, want this host", got)
	}
}

// A host that closed its end of the bridge's stdout, and then sends a
// request, ends the bridge with SIGPIPE, as a write to a closed stdout
// always has: the relay writes stdout through a descriptor of its own
// (raw system calls), where the broken pipe is only an error.
func TestBridgeRelayHostClosedStdout(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	cmd := bridgeCommand(d, "g")
	in, out := pipeBridge(t, cmd)
	h := &rawHost{in: in, out: bufio.NewReader(out)}
	h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := h.reply(t, "1"); m.Error != nil {
		t.Fatalf("initialize: %v", m.Error)
	}
	out.(io.Closer).Close()
	h.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("bridge ended with %v, want SIGPIPE", err)
		}
		if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGPIPE {
			t.Fatalf("bridge ended with %v, want SIGPIPE", err)
		}
	case <-time.After(30 * time.Second): // a bound on a wait for the exit, not a timing
		cmd.Process.Kill()
		<-done // Wait returned: pipeBridge's cleanup waits for nothing more
		t.Fatal("the bridge was still running 30 s after writing to a closed stdout")
	}
}
