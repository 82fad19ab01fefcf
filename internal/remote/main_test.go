package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/remote"
	"github.com/mcpd-dev/mcpd/internal/session"
)

var gosdkBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "remote-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	gosdkBin = filepath.Join(dir, "gosdk")
	out, err := exec.Command("go", "build", "-o", gosdkBin, "github.com/mcpd-dev/mcpd/internal/testservers/gosdk").CombinedOutput()
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

// server is a real MCP server process serving HTTP.
type server struct {
	URL   string
	cmd   *exec.Cmd
	stdin io.WriteCloser

	mu     sync.Mutex // guards stderr
	stderr []string
	cond   chan struct{} // closed and replaced at each stderr line
	done   chan struct{}
}

// startGoSDK runs the Go SDK test server with -http and flags.
func startGoSDK(t *testing.T, flags ...string) *server {
	t.Helper()
	return startServer(t, gosdkBin, append([]string{"-http", "127.0.0.1:0"}, flags...)...)
}

// startServer runs a server that prints its URL on its first stdout line
// and exits when its stdin closes; it is killed at the end of the test.
func startServer(t *testing.T, bin string, args ...string) *server {
	t.Helper()
	s := &server{cmd: exec.Command(bin, args...), cond: make(chan struct{}), done: make(chan struct{})}
	urlCh := startProcess(t, s)
	select {
	case s.URL = <-urlCh:
	case <-s.done:
		t.Fatalf("%s exited before listening: %s", bin, s.stderrText())
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen", bin)
	}
	return s
}

// startProcess starts s.cmd, collecting its stderr lines; the channel
// gets the URL of a "listening URL" stdout line.
func startProcess(t *testing.T, s *server) <-chan string {
	t.Helper()
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if s.stdin, err = s.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.kill)
	urlCh := make(chan string, 1)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				select {
				case urlCh <- u:
				default:
				}
			}
		}
	}()
	go func() {
		defer readers.Done()
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.stderr = append(s.stderr, sc.Text())
			close(s.cond)
			s.cond = make(chan struct{})
			s.mu.Unlock()
		}
	}()
	go func() {
		readers.Wait()
		_ = s.cmd.Wait()
		close(s.done)
	}()
	return urlCh
}

func (s *server) stderrText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.stderr, "\n")
}

// waitStderr waits until a stderr line contains want.
func (s *server) waitStderr(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		s.mu.Lock()
		for _, l := range s.stderr {
			if strings.Contains(l, want) {
				s.mu.Unlock()
				return
			}
		}
		ch := s.cond
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no stderr line with %q; stderr:\n%s", want, s.stderrText())
		}
	}
}

// kill kills the process and waits for it.
func (s *server) kill() {
	if s.cmd.Process != nil {
		_ = s.cmd.Process.Kill()
	}
	<-s.done
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
