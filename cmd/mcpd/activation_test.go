package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// envActivated turns the test binary into a socket-activated mcpd: it
// sets LISTEN_PID to itself, as systemd does after fork, and runs the
// daemon with the space-separated arguments the variable holds.
const envActivated = "MCPD_TEST_ACTIVATED_DAEMON"

// activatedDaemon is the child's side of TestSocketActivatedDaemon.
func activatedDaemon(args string) int {
	os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
	if err := runDaemon(strings.Fields(args), os.Stdout, os.Stderr); err != nil {
		printError(os.Stderr, err)
		return 1
	}
	return 0
}

// initializeBody is a legacy initialize request for the HTTP face.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// postInitialize POSTs an initialize to url and returns the status and body.
func postInitialize(t *testing.T, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(initializeBody))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr, Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// listenerFile is a listener and the file of it a child inherits.
func listenerFile(t *testing.T, l interface {
	net.Listener
	File() (*os.File, error)
}) *os.File {
	t.Helper()
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestSocketActivatedDaemon runs mcpd as systemd starts it from
// mcpd.socket: the API socket and the HTTP face's TCP socket are bound by
// the parent and passed as fds 3 and 4, named "api" and "http". An MCP
// request on the TCP socket reaches the HTTP face, and the API socket
// answers, with the inherited address as the face's URL.
func TestSocketActivatedDaemon(t *testing.T) {
	dir, err := os.MkdirTemp("", "mcpd-act") // short: socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	run := filepath.Join(dir, "run")
	if err := os.Mkdir(run, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(run, "mcpd.sock")
	apiLn, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer apiLn.Close()
	httpLn, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer httpLn.Close()
	base := "http://" + httpLn.Addr().String() + "/mcp"

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.ExtraFiles = []*os.File{listenerFile(t, apiLn), listenerFile(t, httpLn)}
	cmd.Env = append(os.Environ(),
		envActivated+"=--config "+filepath.Join(dir, "none.json")+" --state-dir "+filepath.Join(dir, "state")+" --log-format console",
		"LISTEN_FDS=2", "LISTEN_FDNAMES=api:http", "XDG_CONFIG_HOME="+dir, "XDG_STATE_HOME="+dir)
	var logs strings.Builder
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The test keeps its copies of the sockets open and never accepts on
	// them, as systemd does: mcpd alone serves them.
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cmd.Process.Signal(syscall.SIGTERM)
			cmd.Wait()
		}
	}
	defer func() {
		stop()
		if t.Failed() {
			t.Logf("mcpd's log:\n%s", logs.String())
		}
	}()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := apiclient.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := mcpdv1.NewMcpdClient(conn).GetStatus(ctx, &mcpdv1.GetStatusRequest{}, grpc.WaitForReady(true))
	if err != nil {
		t.Fatalf("GetStatus on the inherited API socket: %v", err)
	}
	if urls := st.GetHttp().GetUrls(); len(urls) != 1 || urls[0] != base {
		t.Errorf("HTTP face URLs %v, want [%s] (the inherited socket)", urls, base)
	}
	// mcpd runs no servers here: the face's bridge answers that, past the
	// peer and Host checks.
	code, body := postInitialize(t, base)
	if want := "mcpd has no enabled servers to bridge"; code != http.StatusInternalServerError || !strings.Contains(body, want) {
		t.Errorf("initialize on the inherited HTTP socket: %d %s, want the face's answer %q", code, body, want)
	}
	conn.Close()
	stop()
	if !strings.Contains(logs.String(), "using HTTP socket from systemd") {
		t.Errorf("mcpd did not say it uses systemd's HTTP socket:\n%s", logs.String())
	}
}

// TestHTTPFaceInherited: the HTTP socket systemd passed wins over the
// default address and is served again after a reload that moved the face
// elsewhere; a setting of its own address serves it; a socket beyond
// loopback is refused.
func TestHTTPFaceInherited(t *testing.T) {
	log := zaptest.NewLogger(t)
	srv := core.New(supervisor.New(supervisor.Options{Logger: log}), core.Options{Logger: log})
	l, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	f := listenerFile(t, l)
	l.Close() // f holds the socket, as systemd's fd does
	inherited := "http://" + l.Addr().String() + "/mcp"
	urls := func() []string { return httpState(t, srv).URLs }

	hf, err := startHTTPFace(resolveHTTPListen("", nil), f, srv, nil, log)
	if err != nil {
		t.Fatal(err)
	}
	defer hf.close()
	if u := urls(); len(u) != 1 || u[0] != inherited {
		t.Fatalf("urls %v, want [%s]", u, inherited)
	}
	served := func(when string) {
		t.Helper()
		// No servers: the face's bridge says so, past the peer check.
		if code, body := postInitialize(t, inherited); !strings.Contains(body, "no enabled servers") {
			t.Fatalf("initialize on the inherited socket %s: %d %s", when, code, body)
		}
	}
	served("at start")
	hf.reload("", &config.Config{HTTPListen: "127.0.0.1:0"})
	if u := urls(); len(u) != 1 || u[0] == inherited {
		t.Fatalf("after httpListen 127.0.0.1:0: urls %v, want another address", u)
	}
	hf.reload("", &config.Config{})
	if u := urls(); len(u) != 1 || u[0] != inherited {
		t.Fatalf("after httpListen removed: urls %v, want [%s]", u, inherited)
	}
	served("after a reload moved the face and back")
	hf.reload("", &config.Config{HTTPListen: "localhost:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)})
	if u := urls(); len(u) != 1 || u[0] != inherited {
		t.Fatalf("after httpListen naming its address: urls %v, want [%s]", u, inherited)
	}

	wide, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4zero})
	if err != nil {
		t.Fatal(err)
	}
	defer wide.Close()
	if _, err := startHTTPFace(resolveHTTPListen("", nil), listenerFile(t, wide), srv, nil, log); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Fatalf("a socket on every interface: %v, want a refusal", err)
	}
}
