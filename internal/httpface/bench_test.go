package httpface

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The HTTP face's hot path in process: a host's POST over loopback TCP to
// the face, through the bridge's HTTP handler and the Backend, to a real
// legacy child, and back. B/op and allocs/op count both ends (the
// client's share is the same for every change of the face).
//
// cpu-µs/op is the test process's CPU time (user+system, both ends, not
// the child's) per request: less disturbed than ns/op on a shared machine.
//
//	go test ./internal/httpface -run '^$' -bench Face -benchmem -benchtime 3000x

// benchEnvelope is the modern _meta of every benchmark request.
const benchEnvelope = `"_meta":{"` + jsonrpc.MetaProtocolVersion + `":"` + jsonrpc.ModernVersion + `","` +
	jsonrpc.MetaClientCapabilities + `":{},"` + jsonrpc.MetaClientInfo + `":{"name":"bench","version":"1"}}`

// benchFace serves the fake child's endpoint and returns its URL.
func benchFace(b *testing.B) string {
	srv, be := newDaemonLogging(b, zap.NewNop())
	h := bridge.NewHTTPHandler(be, bridge.HTTPOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	f := Serve(ln, h, Options{Server: srv, WantUID: -1})
	b.Cleanup(func() {
		h.Close()
		if err := f.Close(); err != nil {
			b.Error(err)
		}
	})
	return "http://" + ln.Addr().String() + "/servers/fake/mcp"
}

// benchPost POSTs one modern request and checks the answer contains want.
func benchPost(b *testing.B, c *http.Client, url string, id int, method, name, params, want string) {
	body := `{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":{` + benchEnvelope + params + `}}`
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("Accept", "application/json, text/event-stream")
	h.Set("MCP-Protocol-Version", jsonrpc.ModernVersion)
	h.Set("Mcp-Method", method)
	if name != "" {
		h.Set("Mcp-Name", name)
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(out, []byte(want)) {
		b.Fatalf("%s: HTTP %d %v: %.300s", method, resp.StatusCode, err, out)
	}
}

func benchClient(b *testing.B) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, IdleConnTimeout: time.Minute}
	b.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func BenchmarkFaceToolsCall(b *testing.B) {
	url := benchFace(b)
	c := benchClient(b)
	params := `,"name":"echo","arguments":{"message":"hello"}`
	for i := range 20 {
		benchPost(b, c, url, i, "tools/call", "echo", params, "hello")
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := range b.N {
		benchPost(b, c, url, i, "tools/call", "echo", params, "hello")
	}
	reportCPU(b, cpu0)
}

// processCPU is the CPU time the test process used so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time per op since cpu0.
func reportCPU(b *testing.B, cpu0 time.Duration) {
	b.ReportMetric(float64(processCPU(b)-cpu0)/float64(b.N)/1e3, "cpu-µs/op")
}

func BenchmarkFaceToolsListCached(b *testing.B) {
	url := benchFace(b)
	c := benchClient(b)
	for i := range 20 {
		benchPost(b, c, url, i, "tools/list", "", "", `"tools"`)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU(b)
	for i := range b.N {
		benchPost(b, c, url, i, "tools/list", "", "", `"tools"`)
	}
	reportCPU(b, cpu0)
}
