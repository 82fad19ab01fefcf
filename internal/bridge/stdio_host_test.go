package bridge_test

import (
	"context"
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
	"github.com/mcpd-dev/mcpd/internal/testing/linehost"
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

// bridgeHost is an MCP host on a bridge served over pipes.
type bridgeHost struct {
	*linehost.Host
	t *testing.T
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
	serve := func(stdin io.Reader, stdout io.Writer) error {
		return bridge.ServeStdio(context.Background(), be, opts, stdin, stdout)
	}
	return &bridgeHost{Host: linehost.Start(t, serve, warnings.String), t: t}
}
