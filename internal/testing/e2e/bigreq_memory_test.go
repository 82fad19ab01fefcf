package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// TestLargeRequestsMemory: what a large request costs mcpd. N concurrent
// 31 MiB tools/calls (N = 1, 8) through each door (gRPC, the bridge relay
// socket "mcpdctl bridge" relays to, by a 2025-11-25 and a 2026-07-28
// host, the HTTP face) to fakemcp's echo, and
// mcpd's peak RSS above its RSS before them (VmHWM, reset by writing 5 to
// /proc/PID/clear_refs). The bound is generous: eight calls at once raise
// the peak by at most 2.2 times their total size. The figures are logged
// (go test -v, lines starting BIGREQ), which is how BENCHMARKS.md's "Large
// requests" section is measured; $MCPD_BIGREQ_MCPD names another mcpd
// binary to measure (an older commit's), without the bound.

// largeArgSize is the size of each call's arguments.
const largeArgSize = 31 << 20

// largeMemoryBound is the most the peak may rise, as a multiple of the
// calls' total size.
const largeMemoryBound = 2.2

// plainMcpd is an mcpd built without -race (the race detector's shadow
// memory would swamp the figures), once per run.
var plainMcpd struct {
	once sync.Once
	path string
	err  error
}

func plainMcpdBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCPD_BIGREQ_MCPD"); p != "" {
		return p
	}
	plainMcpd.once.Do(func() {
		plainMcpd.path = filepath.Join(filepath.Dir(mcpdBin), "mcpd-plain")
		cmd := exec.Command("go", "build", "-o", plainMcpd.path, "github.com/mcpd-dev/mcpd/cmd/mcpd")
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		plainMcpd.err = cmd.Run()
	})
	if plainMcpd.err != nil {
		t.Fatalf("build mcpd: %v", plainMcpd.err)
	}
	return plainMcpd.path
}

// largeArgs are tool arguments of largeArgSize bytes for fakemcp's echo.
func largeArgs() string {
	const head, tail = `{"message":"ok","pad":"`, `"}`
	return head + strings.Repeat("p", largeArgSize-len(head)-len(tail)) + tail
}

func TestLargeRequestsMemory(t *testing.T) {
	skipShort(t)
	bin := plainMcpdBin(t)
	args := largeArgs()
	doors := []struct {
		name  string
		start func(t *testing.T, d *daemon, base string, n int) func(ctx context.Context, i int) error
	}{
		{"grpc", grpcDoor},
		{"relay", relayDoor},
		{"relay-modern", relayModernDoor},
		{"http", httpDoor},
	}
	for _, door := range doors {
		for _, n := range []int{1, 8} {
			t.Run(fmt.Sprintf("%s/%d", door.name, n), func(t *testing.T) {
				d, base := startPlainDaemon(t, bin)
				call := door.start(t, d, base, n)
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				// Warm up: the child started, each app's connection open.
				for i := range n {
					if err := call(ctx, i); err != nil && i == 0 {
						t.Fatalf("warm-up call: %v", err)
					}
				}
				pid := d.cmd.Process.Pid
				base0 := rssBaseline(t, pid)
				errs := make(chan error, n)
				var wg sync.WaitGroup
				for i := range n {
					wg.Go(func() { errs <- callLarge(ctx, call, i, args) })
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Fatalf("large call: %v", err)
					}
				}
				hwm := statusKiB(t, pid, "VmHWM") << 10
				rise := hwm - base0
				total := int64(n) * largeArgSize
				ratio := float64(rise) / float64(total)
				t.Logf("BIGREQ door=%s calls=%d baseline=%.1fMiB peak=%.1fMiB rise=%.1fMiB ratio=%.2fx",
					door.name, n, mb(base0), mb(hwm), mb(rise), ratio)
				if n == 8 && os.Getenv("MCPD_BIGREQ_MCPD") == "" && ratio > largeMemoryBound {
					t.Errorf("%d concurrent %d MiB calls through %s raised mcpd's peak RSS by %.1f MiB, %.2fx their total; want at most %.1fx",
						n, largeArgSize>>20, door.name, mb(rise), ratio, largeMemoryBound)
				}
			})
		}
	}
}

// largeKey carries the arguments a door's call sends (callLarge); without
// it the call is a small warm-up one.
type largeKey struct{}

func callLarge(ctx context.Context, call func(context.Context, int) error, i int, args string) error {
	return call(context.WithValue(ctx, largeKey{}, args), i)
}

// argsOf is the arguments a door's call sends.
func argsOf(ctx context.Context) string {
	if a, ok := ctx.Value(largeKey{}).(string); ok {
		return a
	}
	return `{"message":"ok"}`
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

// startPlainDaemon starts bin on one legacy fakemcp server "s" with the
// HTTP face on a loopback port; it returns the face's base URL.
func startPlainDaemon(t *testing.T, bin string) (*daemon, string) {
	t.Helper()
	bridgeBins(t) // httpStatus runs mcpdctl
	dir := tempdir.Short(t)
	// A loaded machine can take a while to move 31 MiB lines: this test
	// is of memory, not of the stall detection.
	cfg := writeConfig(t, dir, map[string]server{"s": {Mode: "legacy", StdinTimeout: "3m", RequestTimeout: "5m"}})
	socket := filepath.Join(dir, "run", "mcpd.sock")
	// The request memory budget is raised out of the way: eight 31 MiB
	// calls come close to the default 256 MiB, and this test is of the
	// memory the calls take, not of the budget.
	cmd := exec.Command(bin, "--socket", socket, "--config", cfg, "--http-listen", "127.0.0.1:0",
		"--state-dir", filepath.Join(dir, "state"), "--request-memory-budget", strconv.Itoa(1<<30))
	cmd.Env = daemonEnv()
	d := spawnCmd(t, cmd, socket, cfg)
	d.waitServing()
	urls, reason := httpStatus(t, d)
	if len(urls) == 0 || reason != "" {
		t.Fatalf("HTTP face not serving: %v %q", urls, reason)
	}
	base, _ := strings.CutSuffix(urls[0], "/mcp")
	return d, base
}

// rssBaseline returns pid's RSS in bytes and resets its VmHWM to it.
func rssBaseline(t *testing.T, pid int) int64 {
	t.Helper()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Skipf("cannot reset the peak RSS: %v", err)
	}
	return statusKiB(t, pid, "VmRSS") << 10
}

// statusKiB reads a "kB" field of /proc/PID/status.
func statusKiB(t *testing.T, pid int, field string) int64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// grpcDoor: CallTool, one connection per app.
func grpcDoor(t *testing.T, d *daemon, _ string, n int) func(ctx context.Context, i int) error {
	apps := make([]mcpdv1.McpdClient, n)
	for i := range apps {
		apps[i] = mcpdv1.NewMcpdClient(d.dial())
	}
	return func(ctx context.Context, i int) error {
		req := &mcpdv1.CallToolRequest{Server: "s", Tool: "echo", ArgumentsJson: argsOf(ctx),
			Options: &mcpdv1.CallOptions{TimeoutMs: 300000}}
		resp, _, err := callTool(ctx, apps[i], req)
		if err == nil && resp.GetError() != nil {
			err = fmt.Errorf("MCP error: %v", resp.GetError())
		}
		return err
	}
}

// relayDoor: the bridge socket "mcpdctl bridge" relays to, one connection
// per host, each a legacy session.
func relayDoor(t *testing.T, d *daemon, _ string, n int) func(ctx context.Context, i int) error {
	type conn struct {
		c  net.Conn
		r  *bufio.Reader
		id int
	}
	conns := make([]*conn, n)
	for i := range conns {
		c, err := net.Dial("unix", bridge.RelaySocketPath(d.socket))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r := bufio.NewReader(c)
		if _, err := fmt.Fprintf(c, "%s\n", `{"names":["s"]}`); err != nil {
			t.Fatal(err)
		}
		if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"ok":true`) {
			t.Fatalf("relay header answer %q: %v", line, err)
		}
		init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"` + jsonrpc.LegacyVersion +
			`","capabilities":{},"clientInfo":{"name":"bigreq","version":"1"}}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"
		if _, err := c.Write([]byte(init)); err != nil {
			t.Fatal(err)
		}
		if _, err := readRelayAnswer(r, 0); err != nil {
			t.Fatalf("initialize: %v", err)
		}
		conns[i] = &conn{c: c, r: r}
	}
	return func(ctx context.Context, i int) error {
		cn := conns[i]
		cn.id++
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":%s}}`+"\n", cn.id, argsOf(ctx))
		if _, err := cn.c.Write(b.Bytes()); err != nil {
			return err
		}
		_, err := readRelayAnswer(cn.r, cn.id)
		return err
	}
}

// relayModernDoor: the bridge socket, one connection per host, each a
// 2026-07-28 host: no initialize, the envelope in each request's _meta.
func relayModernDoor(t *testing.T, d *daemon, _ string, n int) func(ctx context.Context, i int) error {
	type conn struct {
		c  net.Conn
		r  *bufio.Reader
		id int
	}
	conns := make([]*conn, n)
	for i := range conns {
		c, err := net.Dial("unix", bridge.RelaySocketPath(d.socket))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		r := bufio.NewReader(c)
		if _, err := fmt.Fprintf(c, "%s\n", `{"names":["s"]}`); err != nil {
			t.Fatal(err)
		}
		if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"ok":true`) {
			t.Fatalf("relay header answer %q: %v", line, err)
		}
		conns[i] = &conn{c: c, r: r}
	}
	return func(ctx context.Context, i int) error {
		cn := conns[i]
		cn.id++
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"echo","arguments":%s}}`+"\n", cn.id, modernEnvelope, argsOf(ctx))
		if _, err := cn.c.Write(b.Bytes()); err != nil {
			return err
		}
		_, err := readRelayAnswer(cn.r, cn.id)
		return err
	}
}

// modernEnvelope is the _meta member of a 2026-07-28 host's request.
const modernEnvelope = `"_meta":{"` + jsonrpc.MetaProtocolVersion + `":"` + jsonrpc.ModernVersion + `","` +
	jsonrpc.MetaClientCapabilities + `":{},"` + jsonrpc.MetaClientInfo + `":{"name":"bigreq","version":"1"}}`

// readRelayAnswer reads lines until the response to id, which it returns;
// an error response is an error.
func readRelayAnswer(r *bufio.Reader, id int) (string, error) {
	want := `"id":` + strconv.Itoa(id)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		if !strings.Contains(line, want) {
			continue
		}
		if strings.Contains(line, `"error"`) {
			return "", fmt.Errorf("error response: %.300s", line)
		}
		return line, nil
	}
}

// httpDoor: modern stateless POSTs to /servers/s/mcp.
func httpDoor(t *testing.T, _ *daemon, base string, n int) func(ctx context.Context, i int) error {
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	t.Cleanup(hc.CloseIdleConnections)
	url := base + "/servers/s/mcp"
	meta := modernEnvelope
	return func(ctx context.Context, i int) error {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"echo","arguments":%s}}`, i+1, meta, argsOf(ctx))
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, &b)
		if err != nil {
			return err
		}
		h := req.Header
		h.Set("Content-Type", "application/json")
		h.Set("Accept", "application/json, text/event-stream")
		h.Set("MCP-Protocol-Version", jsonrpc.ModernVersion)
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", "echo")
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := readAllLimited(resp)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(`"error"`)) {
			return fmt.Errorf("HTTP %d: %.300s", resp.StatusCode, body)
		}
		return nil
	}
}

func readAllLimited(resp *http.Response) ([]byte, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(resp.Body)
	return b.Bytes(), err
}
