package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/bridgegrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// The test binary doubles as the fake MCP server the daemons of these
// tests spawn (fakemcp.Command); Main returns at once unless MCPD_FAKE is
// set.
func init() { fakemcp.Main() }

// startWait is how long a request waits for an mcpd that is not running,
// mcpdctl bridge's default --wait.
const startWait = 10 * time.Second

// dialMcpd is the bridge's backend: mcpd at sock over gRPC, dialled as
// mcpdctl bridge does (through apiclient); it is closed when the test ends.
func dialMcpd(t *testing.T, sock string) *bridgegrpc.Backend {
	t.Helper()
	be, err := bridgegrpc.Dial(sock, func() error { return errors.New("mcpd is not running") })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// mcpdClient is a gRPC client of mcpd at sock, for a test to act on mcpd
// as an operator does (start a server, read its status).
func mcpdClient(t *testing.T, sock string) mcpdv1.McpdClient {
	t.Helper()
	conn, err := apiclient.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return mcpdv1.NewMcpdClient(conn)
}

// startServer starts server, as mcpdctl start does.
func startServer(t *testing.T, sock, server string) {
	t.Helper()
	if _, err := mcpdClient(t, sock).StartServer(t.Context(), &mcpdv1.StartServerRequest{Name: server}); err != nil {
		t.Fatalf("start %s: %v", server, err)
	}
}

// bridgeHost runs a bridge in-process, as an MCP host does: it writes lines
// to the bridge's stdin and reads its stdout.
type bridgeHost struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan map[string]json.RawMessage
}

// startBridge runs a bridge of server "s" against sock.
func startBridge(t *testing.T, sock string) *bridgeHost {
	t.Helper()
	return startBridgeOf(t, sock, "s")
}

// startBridgeOf runs a bridge of the servers names against sock.
func startBridgeOf(t *testing.T, sock string, names ...string) *bridgeHost {
	t.Helper()
	return startBridgeWith(t, sock, bridge.Options{Names: names})
}

// lockedBuffer is the bridge's warnings, written while it runs.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) warnf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString("warning: " + strings.TrimSuffix(fmt.Sprintf(format, args...), "\n") + "\n")
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBridgeWith runs bridge.ServeStdio with opts against sock over
// pipes, with what mcpdctl bridge fills in: its default MaxLine and
// StartWait, its client identity in every call, and warnings kept for a
// failure's message.
func startBridgeWith(t *testing.T, sock string, opts bridge.Options) *bridgeHost {
	t.Helper()
	be := dialMcpd(t, sock)
	if opts.MaxLine == 0 {
		opts.MaxLine = bridge.DefaultMaxLine
	}
	opts.StartWait = startWait
	var warnings lockedBuffer
	opts.Warnf = warnings.warnf
	opts.RPCError = func(ctx context.Context, err error, server string) error {
		return bridge.RPCError(ctx, err, server, be.Down, be.NotRunning)
	}
	opts.CallOptions = func() service.Options {
		return service.Options{Client: service.Client{Name: "mcpdctl", Version: version.Version}}
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &bridgeHost{t: t, in: inW, lines: make(chan map[string]json.RawMessage, 64)}
	var wg sync.WaitGroup
	wg.Go(func() {
		err := bridge.ServeStdio(context.Background(), be, opts, inR, outW)
		outW.Close()
		if err != nil {
			t.Errorf("bridge: %v\n%s", err, warnings.String())
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
	})
	return h
}

func (h *bridgeHost) send(msg string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, msg+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// next returns the bridge's next message that satisfies match.
func (h *bridgeHost) next(what string, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	h.t.Helper()
	return h.nextWithin(what, 10*time.Second, match)
}

// nextWithin is next, waiting d at most.
func (h *bridgeHost) nextWithin(what string, d time.Duration, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	h.t.Helper()
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		select {
		case m, ok := <-h.lines:
			if !ok {
				h.t.Fatalf("the bridge exited before %s", what)
			}
			if match(m) {
				return m
			}
		case <-timeout.C:
			h.t.Fatalf("no %s from the bridge", what)
		}
	}
}

func (h *bridgeHost) response(id string) map[string]json.RawMessage {
	h.t.Helper()
	return h.next("response "+id, func(m map[string]json.RawMessage) bool { return string(m["id"]) == id })
}
