package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/linehost"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
)

// The test binary doubles as the fake MCP server the daemons of these
// tests spawn (fakemcp.Command); Main returns at once unless MCPD_FAKE is
// set.
func init() { fakemcp.Main() }

// The bridge's MCP behaviour is tested with internal/bridge; here, that
// mcpdctl bridge runs it for a host on stdin and stdout.

// startBridgeOf runs `mcpdctl bridge ARGS...` in-process against sock, as
// an MCP host does: it writes lines to the bridge's stdin and reads its
// stdout.
func startBridgeOf(t *testing.T, sock string, args ...string) *linehost.Host {
	t.Helper()
	old := bridgeStdin
	t.Cleanup(func() { bridgeStdin = old }) // after the bridge returned: linehost waits
	var stderr syncWriter                   // the bridge warns from its goroutines
	serve := func(stdin io.Reader, stdout io.Writer) error {
		bridgeStdin = stdin
		return run(context.Background(), append([]string{"--socket", sock, "bridge"}, args...), stdout, &stderr)
	}
	return linehost.Start(t, serve, stderr.String)
}

// --max-line-size is the bridge's limit on the host's lines: a longer line
// is answered with an error naming it, and the bridge goes on serving.
func TestBridgeMaxLineSizeFlag(t *testing.T) {
	sock := mcpdtest.Start(t, "s", "legacy")
	h := startBridgeOf(t, sock, "--max-line-size", "1024", "s")
	h.Send(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2000) + `"}}`)
	if e := string(h.Response("1")["error"]); !strings.Contains(e, "-32600") || !strings.Contains(e, "1024 bytes") {
		t.Errorf("a line over --max-line-size answered %s, want -32600 naming the limit", e)
	}
	h.Send(`{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if m := h.Response("2"); m["error"] != nil || string(m["result"]) != "{}" {
		t.Errorf("ping after the long line answered %s %s, want its result", m["result"], m["error"])
	}
}
