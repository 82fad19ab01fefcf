package httpface

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// otherUID is the uid of the refused client (nobody).
const otherUID = 65534

// clientCopy is a copy of the test binary that other uids can run, outside
// the build cache's private directories.
func clientCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hfclient")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile(must(os.Executable()))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "client")
	if err := os.WriteFile(p, self, 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOtherUIDRefused: a client running as another uid gets 403 and a
// JSON-RPC error on TCP and on a unix socket opened up to everyone; our own
// uid is served.
func TestOtherUIDRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid")
	}
	other := &syscall.Credential{Uid: otherUID, Gid: otherUID}
	ln, err := Listen(must(ParseAddr("127.0.0.1:0")))
	if err != nil {
		t.Fatal(err)
	}
	f := serveT(t, ln)
	tcp := "tcp:" + f.Addr().String()
	if got := runClient(t, tcp, nil); got != "200 ok" {
		t.Fatalf("own uid over TCP: %q", got)
	}
	if got := runClient(t, tcp, other); !strings.HasPrefix(got, "403 ") || !strings.Contains(got, `"jsonrpc":"2.0"`) {
		t.Fatalf("uid %d over TCP: %q, want 403 with a JSON-RPC error", otherUID, got)
	}

	dir, err := os.MkdirTemp("", "hfsock")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "mcp.sock")
	uln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	// Permissions alone no longer keep the other uid out.
	for p, mode := range map[string]os.FileMode{dir: 0o755, sock: 0o666} {
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	serveT(t, uln)
	if got := runClient(t, "unix:"+sock, nil); got != "200 ok" {
		t.Fatalf("own uid over unix: %q", got)
	}
	if got := runClient(t, "unix:"+sock, other); !strings.HasPrefix(got, "403 ") {
		t.Fatalf("uid %d over unix: %q, want 403", otherUID, got)
	}
}
