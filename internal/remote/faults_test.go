package remote_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
)

func TestServerKilledMidCall(t *testing.T) {
	for _, flags := range [][]string{nil, {"-stateless"}} {
		t.Run(strings.Join(append([]string{"gosdk"}, flags...), " "), func(t *testing.T) {
			srv := startGoSDK(t, flags...)
			c := connect(t, remote.Options{URL: srv.URL}, session.ProtocolAuto)
			errc := make(chan error, 1)
			go func() {
				_, err := c.call(t, 30*time.Second, "tools/call", `{"name":"sleep","arguments":{"ms":30000}}`, nil)
				errc <- err
			}()
			srv.WaitLine(t, "sleep started 30000")
			srv.Kill()
			select {
			case err := <-errc:
				if err == nil || !errors.Is(err, session.ErrClosed) {
					t.Fatalf("call on a killed server: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not end when the server was killed")
			}
			select {
			case <-c.conn.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the Conn did not end")
			}
			if c.conn.ExitError() == nil {
				t.Fatal("no ExitError after a lost connection")
			}
		})
	}
}

func TestOversizeResponse(t *testing.T) {
	for _, flags := range [][]string{nil, {"-json"}, {"-stateless"}} {
		t.Run(strings.Join(append([]string{"gosdk"}, flags...), " "), func(t *testing.T) {
			srv := startGoSDK(t, flags...)
			c := connect(t, remote.Options{URL: srv.URL, MaxMessageSize: 4096}, session.ProtocolAuto)
			start := time.Now()
			_, err := c.call(t, 20*time.Second, "tools/call", `{"name":"big","arguments":{"bytes":100000}}`, nil)
			if !errors.Is(err, remote.ErrResponseTooLarge) || time.Since(start) > 5*time.Second {
				t.Fatalf("oversize: %v after %s", err, time.Since(start))
			}
			if st := c.conn.Stats(); st.LinesOversize != 1 {
				t.Errorf("stats: %+v", st)
			}
			c.mustCall(t, "tools/call", `{"name":"echo","arguments":{"message":"small"}}`)
		})
	}
}

func TestConnectionRefused(t *testing.T) {
	srv := startGoSDK(t)
	url := srv.URL
	srv.Kill()
	start := time.Now()
	_, err := tryConnect(t, remote.Options{URL: url}, session.ProtocolAuto)
	if err == nil || !strings.Contains(err.Error(), "connection refused") || time.Since(start) > 5*time.Second {
		t.Fatalf("connect to a closed port: %v after %s", err, time.Since(start))
	}
}
