package httpface

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/zap/zaptest"
)

// envClient turns the test binary into an HTTP client: "tcp:ADDR" or
// "unix:PATH"; it prints the status code of GET /mcp, or "closed".
const envClient = "MCPD_HTTPFACE_TEST_CLIENT"

func clientMain() int {
	target := os.Getenv(envClient)
	network, addr, _ := strings.Cut(target, ":")
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	host := addr
	if network == "unix" {
		host = "localhost"
	}
	resp, err := (&http.Client{Transport: tr}).Get("http://" + host + "/mcp")
	if err != nil {
		fmt.Print("closed")
		return 0
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
	return 0
}

// okHandler answers 200 "ok".
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") })

func serveT(t *testing.T, ln net.Listener) *Face {
	t.Helper()
	f := Serve(ln, okHandler, Options{Logger: zaptest.NewLogger(t), WantUID: -1})
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Error(err)
		}
	})
	return f
}

// get sends GET /mcp to the face at addr with the given Host and Origin.
func get(t *testing.T, addr, host, origin string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("GET", "http://"+addr+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestHostAndOrigin(t *testing.T) {
	ln, err := Listen(must(ParseAddr("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	f := serveT(t, ln)
	addr := f.Addr().String()
	port := addr[strings.LastIndex(addr, ":")+1:]
	defer http.DefaultClient.CloseIdleConnections()
	for _, tc := range []struct {
		host, origin string
		want         int
	}{
		{"", "", 200},
		{"localhost:" + port, "", 200},
		{"evil.example", "", 403},
		{"evil.example:" + port, "", 403},
		{"127.0.0.1:1", "", 403},
		{"", "http://evil.example", 403},
		{"", "null", 403},
		{"", "http://localhost:" + port, 200},
		{"", "https://127.0.0.1:" + port, 200},
		{"", "http://[::1]:" + port, 200},
		{"", "http://[::1]", 403},      // port 80: another site
		{"", "https://localhost", 403}, // port 443
		{"", "http://localhost:80", 403},
		{"", "http://localhost:1", 403},
		{"", "file://localhost", 403},
	} {
		code, body := get(t, addr, tc.host, tc.origin)
		if code != tc.want {
			t.Errorf("Host %q Origin %q: %d %s, want %d", tc.host, tc.origin, code, body, tc.want)
		}
		if code == 403 && (!strings.Contains(body, `"jsonrpc":"2.0"`) || strings.Contains(body, `"id"`)) {
			t.Errorf("403 body %s: want a JSON-RPC error without id", body)
		}
	}
	// Two Origins, the first this machine's: refused (a browser sends one).
	req, err := http.NewRequest("GET", "http://"+addr+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Add("Origin", "http://localhost:"+port)
	req.Header.Add("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Errorf("two Origins: %d, want 403", resp.StatusCode)
	}
}

func TestParseAddr(t *testing.T) {
	for in, want := range map[string]string{
		"127.0.0.1:6273": "127.0.0.1:6273", "localhost:0": "127.0.0.1:0", "[::1]:80": "[::1]:80",
		"127.9.9.9:1": "127.9.9.9:1", "unix:/run/x.sock": "unix:/run/x.sock",
	} {
		a, err := ParseAddr(in)
		if err != nil || a.String() != want {
			t.Errorf("ParseAddr(%q) = %v, %v; want %s", in, a, err, want)
		}
	}
	for in, msg := range map[string]string{
		"0.0.0.0:6273": "not a loopback", ":6273": "every interface", "[::]:1": "not a loopback",
		"example.com:80": "not a loopback", "192.168.1.2:1": "not a loopback", "127.0.0.1": "want a loopback",
		"127.0.0.1:99999": "port", "unix:rel.sock": "absolute",
	} {
		if _, err := ParseAddr(in); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("ParseAddr(%q) = %v, want an error saying %q", in, err, msg)
		}
	}
}

func TestUnixListener(t *testing.T) {
	dir, err := os.MkdirTemp("", "hf")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "run", "mcp.sock")
	// A stale socket (nobody accepts on it) is replaced.
	if err := os.Mkdir(filepath.Dir(sock), 0o700); err != nil {
		t.Fatal(err)
	}
	stale, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	stale.SetUnlinkOnClose(false)
	stale.Close()
	ln, err := Listen(Addr{Network: "unix", Address: sock})
	if err != nil {
		t.Fatalf("Listen over a stale socket: %v", err)
	}
	if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v, %v: want 0600", fi.Mode(), err)
	}
	// A live one is not.
	if _, err := Listen(Addr{Network: "unix", Address: sock}); !errors.Is(err, ErrAddrInUse) {
		t.Fatalf("second Listen = %v, want refused", err)
	}
	serveT(t, ln)
	if out := runClient(t, "unix:"+sock, nil); out != "200 ok" {
		t.Fatalf("own uid over unix: %q", out)
	}
}

// runClient runs the test binary (a copy other uids can run) as an HTTP
// client of target under cred (nil: ours) and returns what it printed.
func runClient(t *testing.T, target string, cred *syscall.Credential) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	if cred != nil {
		cmd = exec.Command(clientCopy(t), "-test.run=^$")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	cmd.Env = append(os.Environ(), envClient+"="+target)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("client: %v: %s", err, out)
	}
	return string(out)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
