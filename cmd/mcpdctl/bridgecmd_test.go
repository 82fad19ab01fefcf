package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
)

// The test binary doubles as the fake MCP server the daemons of these
// tests spawn (fakemcp.Command); Main returns at once unless MCPD_FAKE is
// set.
func init() { fakemcp.Main() }

// The bridge's MCP behaviour is tested with internal/bridge; here, that
// mcpdctl bridge runs it for a host on stdin and stdout.

// bridgeHost runs `mcpdctl bridge` in-process, as an MCP host does: it
// writes lines to the bridge's stdin and reads its stdout.
type bridgeHost struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan map[string]json.RawMessage
}

// startBridgeOf runs `mcpdctl bridge ARGS...` in-process against sock.
func startBridgeOf(t *testing.T, sock string, args ...string) *bridgeHost {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	old := bridgeStdin
	bridgeStdin = inR
	h := &bridgeHost{t: t, in: inW, lines: make(chan map[string]json.RawMessage, 64)}
	var wg sync.WaitGroup
	wg.Go(func() {
		var stderr strings.Builder
		err := run(context.Background(), append([]string{"--socket", sock, "bridge"}, args...), outW, &stderr)
		outW.Close()
		if err != nil {
			t.Errorf("bridge: %v\n%s", err, stderr.String())
		}
	})
	wg.Go(func() {
		defer close(h.lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("bridge wrote %q: %v", sc.Text(), err)
				continue
			}
			h.lines <- m
		}
	})
	t.Cleanup(func() {
		inW.Close() // the host goes away: the bridge exits
		for range h.lines {
		}
		wg.Wait()
		bridgeStdin = old
	})
	return h
}

func (h *bridgeHost) send(msg string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, msg+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// response returns the bridge's response to id, waiting 10s at most.
func (h *bridgeHost) response(id string) map[string]json.RawMessage {
	h.t.Helper()
	timeout := time.NewTimer(10 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case m, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("the bridge exited before response %s", id)
			}
			if string(m["id"]) == id {
				return m
			}
		case <-timeout.C:
			h.t.Fatalf("no response %s from the bridge", id)
		}
	}
}

// --max-line-size is the bridge's limit on the host's lines: a longer line
// is answered with an error naming it, and the bridge goes on serving.
func TestBridgeMaxLineSizeFlag(t *testing.T) {
	sock := mcpdtest.Start(t, "s", "legacy")
	h := startBridgeOf(t, sock, "--max-line-size", "1024", "s")
	h.send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`)
	if e := string(h.response("1")["error"]); !strings.Contains(e, "-32600") || !strings.Contains(e, "1024 bytes") {
		t.Errorf("a line over --max-line-size answered %s, want -32600 naming the limit", e)
	}
	h.send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := h.response("2"); m["error"] != nil || string(m["result"]) != "{}" {
		t.Errorf("ping after the long line answered %s %s, want its result", m["result"], m["error"])
	}
}
