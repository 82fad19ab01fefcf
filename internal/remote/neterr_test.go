package remote_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
)

// dialSSE connects to url as an HTTP+SSE server: Dial opens the stream,
// so it fails as the server's first request does.
func dialSSE(t *testing.T, url string) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := remote.Dial(ctx, remote.Options{Name: "s", URL: url, Type: remote.TypeSSE})
	if err == nil {
		c.Kill()
		<-c.Done()
		t.Fatalf("Dial %s succeeded", url)
	}
	return err
}

func TestUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/sse"
	ln.Close()
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	tlsSrv.StartTLS()
	defer tlsSrv.Close()
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "boom", http.StatusInternalServerError)
	}))
	plain.Config.ErrorLog = log.New(io.Discard, "", 0)
	defer plain.Close()
	dnsErr := &url.Error{Op: "Post", URL: "http://nowhere.invalid/mcp", Err: &net.OpError{Op: "dial", Net: "tcp",
		Err: &net.DNSError{Err: "no such host", Name: "nowhere.invalid", IsNotFound: true}}}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"refused", dialSSE(t, closed), true},
		{"untrusted certificate", dialSSE(t, tlsSrv.URL+"/sse"), true},
		// net/http says an HTTP answer to https with an error of no type
		// of its own: not classified, so bounded as a broken server.
		{"HTTP answer to https", dialSSE(t, "https"+plain.URL[len("http"):]+"/sse"), false},
		{"dns", fmt.Errorf("server %q: %w", "s", dnsErr), true},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{"HTTP 500", dialSSE(t, plain.URL+"/sse"), false},
		{"reset after accept", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, false},
		{"cut mid-message", fmt.Errorf("reading: %w", io.ErrUnexpectedEOF), false},
		{"mcpd's deadline", fmt.Errorf("start: %w", context.DeadlineExceeded), false},
		{"nil", nil, false},
	} {
		if got := remote.Unreachable(tc.err); got != tc.want {
			t.Errorf("%s: Unreachable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
	if err := dialSSE(t, closed); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("refused: %v does not keep ECONNREFUSED in its chain", err)
	}
}
