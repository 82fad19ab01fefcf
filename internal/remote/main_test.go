package remote_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/servers/upstream"
)

var gosdkBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "remote-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gosdkBin = filepath.Join(dir, "gosdk")
	out, err := exec.Command("go", "build", "-o", gosdkBin, "github.com/mcpd-dev/mcpd/internal/testing/servers/gosdk").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "build gosdk: %v\n%s", err, out)
		os.Exit(1)
	}
	code := 0
	func() {
		defer os.RemoveAll(dir)
		defer func() {
			if code == 0 {
				if err := goleak.Find(); err != nil {
					fmt.Fprintln(os.Stderr, err)
					code = 1
				}
			}
		}()
		code = m.Run()
	}()
	os.Exit(code)
}

// startGoSDK runs the Go SDK test server with -http and flags.
func startGoSDK(t *testing.T, flags ...string) *upstream.Process {
	t.Helper()
	return upstream.GoSDK(t, gosdkBin, flags...)
}

// client is a session over a remote Conn.
type client struct {
	conn  *remote.Conn
	sess  *session.Session
	notes chan session.Notification
	info  session.Info
}

// connect dials opts and runs the handshake with protocol.
func connect(t *testing.T, opts remote.Options, protocol string) *client {
	t.Helper()
	c, err := tryConnect(t, opts, protocol)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return c
}

func tryConnect(t *testing.T, opts remote.Options, protocol string) (*client, error) {
	t.Helper()
	if opts.Name == "" {
		opts.Name = "srv"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, err := remote.Dial(ctx, opts)
	if err != nil {
		return nil, err
	}
	c := &client{conn: conn, notes: make(chan session.Notification, 256)}
	c.sess = session.New(conn, session.Options{
		Server:          opts.Name,
		Protocol:        protocol,
		DiscoverTimeout: 5 * time.Second,
		Capabilities:    json.RawMessage(`{"roots":{},"elicitation":{}}`),
		OnNotification: func(n session.Notification) {
			select {
			case c.notes <- n:
			default:
			}
		},
		OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			if method == "roots/list" {
				return json.RawMessage(`{"roots":[]}`), nil
			}
			return nil, &session.RPCError{Code: -32601, Message: "no"}
		},
	})
	t.Cleanup(func() {
		_ = conn.Stop()
		c.sess.Wait()
	})
	c.info, err = c.sess.Handshake(ctx)
	if err != nil {
		return c, err
	}
	return c, nil
}

// call runs method with params within d.
func (c *client) call(t *testing.T, d time.Duration, method, params string, onProgress func(json.RawMessage)) (*session.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.sess.Call(ctx, &session.Request{Method: method, Params: json.RawMessage(params), OnProgress: onProgress})
}

// mustCall is call that fails the test on any error.
func (c *client) mustCall(t *testing.T, method, params string) json.RawMessage {
	t.Helper()
	resp, err := c.call(t, 20*time.Second, method, params, nil)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if resp.Error != nil {
		t.Fatalf("%s: %v", method, resp.Error)
	}
	return resp.Result
}

// waitNote waits for a notification with method.
func (c *client) waitNote(t *testing.T, method string) session.Notification {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case n := <-c.notes:
			if n.Method == method {
				return n
			}
		case <-deadline:
			t.Fatalf("no %s notification", method)
		}
	}
}
