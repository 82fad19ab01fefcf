package upstream

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// GoSDK runs the Go SDK test server binary bin with -http on a free
// loopback port and flags (-stateless, -json); p.URL is its /mcp endpoint.
// It exits when its stdin closes.
func GoSDK(t testing.TB, bin string, flags ...string) *Process {
	t.Helper()
	return GoSDKAt(t, bin, "127.0.0.1:0", flags...)
}

// GoSDKAt is GoSDK listening on addr (HOST:PORT): a server started again
// where it was before, its p.URL the same.
func GoSDKAt(t testing.TB, bin, addr string, flags ...string) *Process {
	t.Helper()
	p := Start(t, exec.Command(bin, append([]string{"-http", addr}, flags...)...))
	p.graceful = true
	p.waitURL(t)
	return p
}

// NodeModules is the repository's node_modules directory, with node on
// PATH and each of packages installed in it. The test is skipped when
// they are missing, except in CI, where npm ci must have installed them.
func NodeModules(t testing.TB, packages ...string) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(file), "..", "..", "..", "..", "node_modules")
	var missing []string
	if _, err := exec.LookPath("node"); err != nil {
		missing = append(missing, "node")
	}
	for _, p := range packages {
		if _, err := os.Stat(filepath.Join(dir, p, "package.json")); err != nil {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("missing in CI (npm ci): %s", strings.Join(missing, ", "))
		}
		t.Skipf("missing: %s (run npm ci)", strings.Join(missing, ", "))
	}
	return dir
}

// everythingPackage is server-everything's directory in node_modules.
const everythingPackage = "@modelcontextprotocol/server-everything"

// entryPoint is the script of package pkg in node_modules dir.
func entryPoint(dir, pkg string) string { return filepath.Join(dir, pkg, "dist", "index.js") }

// Everything runs server-everything in mode ("sse" or "streamableHttp") on
// a free loopback port and returns it with its base URL
// (http://127.0.0.1:PORT; the endpoints are /sse and /mcp).
func Everything(t testing.TB, mode string) (*Process, string) {
	t.Helper()
	port := freePort(t)
	return EverythingOnPort(t, mode, port), fmt.Sprintf("http://127.0.0.1:%d", port)
}

// EverythingOnPort runs server-everything in mode on port, once it listens:
// a server started again where it was before.
func EverythingOnPort(t testing.TB, mode string, port int) *Process {
	t.Helper()
	cmd := exec.Command("node", entryPoint(NodeModules(t, everythingPackage), everythingPackage), mode)
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	p := Start(t, cmd)
	p.WaitLine(t, fmt.Sprintf("port %d", port))
	return p
}

// freePort is a loopback TCP port that was free a moment ago, for servers
// that cannot be told to pick one.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// shellQuote quotes s for sh.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
