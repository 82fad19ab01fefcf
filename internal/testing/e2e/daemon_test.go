package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// waitTimeout bounds every poll of these tests; it is a safety net against
// hangs, never an expectation about speed.
const waitTimeout = 60 * time.Second

// server is one entry of a test config.
type server struct {
	Mode          string // MCPD_FAKE
	Autostart     bool
	ShutdownGrace string
	Restart       string
	StdinTimeout  string
	// RequestTimeout is the server's requestTimeout, "" for mcpd's default.
	RequestTimeout string
}

// daemon is one running mcpd process.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	dir    string
	socket string
	config string
	stderr *syncBuffer
	waited chan struct{} // closed when cmd.Wait returned
	err    error         // cmd.Wait's result, valid after waited

	mu       sync.Mutex // guards children
	children map[int]bool
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec.Cmd and
// a reading test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() || mcpdBin == "" {
		t.Skip("end-to-end test: skipped under -short")
	}
}

// writeConfig writes a config with the given fake servers to dir/config.json.
func writeConfig(t *testing.T, dir string, servers map[string]server) string {
	t.Helper()
	bin, args := fakemcp.Command()
	m := map[string]any{}
	for name, s := range servers {
		e := map[string]any{
			"command": bin,
			"args":    args,
			"env":     map[string]string{fakemcp.EnvMode: s.Mode},
		}
		if s.Autostart {
			e["autostart"] = true
		}
		if s.ShutdownGrace != "" {
			e["shutdownGrace"] = s.ShutdownGrace
		}
		if s.Restart != "" {
			e["restart"] = s.Restart
		}
		if s.StdinTimeout != "" {
			e["stdinTimeout"] = s.StdinTimeout
		}
		if s.RequestTimeout != "" {
			e["requestTimeout"] = s.RequestTimeout
		}
		m[name] = e
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": m}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// startDaemon starts mcpd on a fresh socket with the given servers and
// waits until its health service answers SERVING.
func startDaemon(t *testing.T, servers map[string]server) *daemon {
	t.Helper()
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), writeConfig(t, dir, servers))
	d.waitServing()
	return d
}

// spawnDaemon starts mcpd without waiting for it. The test's cleanup stops
// it (SIGKILL if SIGTERM does not do) and kills any child it saw.
func spawnDaemon(t *testing.T, socket, config string, extraArgs ...string) *daemon {
	t.Helper()
	args := append([]string{"--socket", socket, "--config", config, "--log-level", "debug", "--http-listen", "off"}, extraArgs...)
	if !slices.Contains(extraArgs, "--state-dir") {
		// Pins and the audit log of this test only.
		args = append(args, "--state-dir", filepath.Join(filepath.Dir(config), "state"))
	}
	cmd := exec.Command(mcpdBin, args...)
	cmd.Env = daemonEnv()
	return spawnCmd(t, cmd, socket, config)
}

// spawnCmd starts cmd, a process that becomes mcpd serving socket. One
// started without --state-dir or an XDG_STATE_HOME of its own gets
// XDG_STATE_HOME in config's directory: no test writes the user's pins,
// audit log or OAuth credentials.
func spawnCmd(t *testing.T, cmd *exec.Cmd, socket, config string) *daemon {
	t.Helper()
	if cmd.Env == nil {
		cmd.Env = daemonEnv()
	}
	if !slices.Contains(cmd.Args, "--state-dir") && !slices.ContainsFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, "XDG_STATE_HOME=")
	}) {
		cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+filepath.Join(filepath.Dir(config), "xdg-state"))
	}
	d := &daemon{
		t:        t,
		cmd:      cmd,
		dir:      filepath.Dir(config),
		socket:   socket,
		config:   config,
		stderr:   &syncBuffer{},
		waited:   make(chan struct{}),
		children: map[int]bool{},
	}
	d.cmd.Stdout = d.stderr
	d.cmd.Stderr = d.stderr
	dieWithTest(d.cmd)
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { // owned: the cleanup below waits for it
		d.err = d.cmd.Wait()
		close(d.waited)
	}()
	t.Cleanup(func() {
		select {
		case <-d.waited:
		default:
			d.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-d.waited:
			case <-time.After(waitTimeout):
				d.cmd.Process.Kill()
				<-d.waited
			}
		}
		removeRecordedCgroups(d.socket)
		d.mu.Lock()
		defer d.mu.Unlock()
		for pid := range d.children {
			if alive(pid) {
				t.Errorf("child pid %d still alive after mcpd exited; killing it", pid)
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() || os.Getenv("MCPD_E2E_DUMP") != "" {
			t.Logf("mcpd output:\n%s", d.stderr.String())
		}
		noteFailed(t)
	})
	return d
}

// daemonEnv is the test's environment without variables that would change
// mcpd's behaviour, or where it keeps its state (XDG_STATE_HOME: the
// user's).
func daemonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch {
		case strings.HasPrefix(kv, "MCPD_"), strings.HasPrefix(kv, "LISTEN_"), strings.HasPrefix(kv, "NOTIFY_SOCKET="),
			strings.HasPrefix(kv, "GORACE="), strings.HasPrefix(kv, "XDG_STATE_HOME="):
			continue
		}
		env = append(env, kv)
	}
	// The race detector sleeps 1s at exit by default; the shutdown test
	// measures mcpd, not that.
	return append(env, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}

// dial returns a client connection to the daemon's socket.
func (d *daemon) dial() *grpc.ClientConn {
	d.t.Helper()
	return dialSocket(d.t, d.socket)
}

func dialSocket(t *testing.T, socket string) *grpc.ClientConn {
	t.Helper()
	// Retry quickly while mcpd is still starting.
	conn, err := apiclient.Dial(socket, apiclient.Reconnect(20*time.Millisecond, 500*time.Millisecond, 5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

func (d *daemon) client() mcpdv1.McpdClient { return mcpdv1.NewMcpdClient(d.dial()) }

// waitServing polls the health service until it answers SERVING.
func (d *daemon) waitServing() {
	d.t.Helper()
	waitServing(d.t, d.socket, d.waited)
}

func waitServing(t *testing.T, socket string, exited <-chan struct{}) {
	t.Helper()
	conn := dialSocket(t, socket)
	hc := healthpb.NewHealthClient(conn)
	poll(t, "mcpd serving", func() (bool, error) {
		select {
		case <-exited:
			return false, errors.New("mcpd exited before serving")
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		resp, err := hc.Check(ctx, &healthpb.HealthCheckRequest{})
		return err == nil && resp.GetStatus() == healthpb.HealthCheckResponse_SERVING, nil
	})
}

// status returns GetStatus and records every child pid it names.
func (d *daemon) status(c mcpdv1.McpdClient) *mcpdv1.GetStatusResponse {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := c.GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		d.t.Fatalf("GetStatus: %v", err)
	}
	d.mu.Lock()
	for _, s := range st.GetServers() {
		if s.GetPid() > 0 {
			d.children[int(s.GetPid())] = true
		}
	}
	d.mu.Unlock()
	return st
}

// serverStatus returns one server's status from GetStatus.
func (d *daemon) serverStatus(c mcpdv1.McpdClient, name string) *mcpdv1.ServerStatus {
	d.t.Helper()
	for _, s := range d.status(c).GetServers() {
		if s.GetName() == name {
			return s
		}
	}
	d.t.Fatalf("server %q not in status", name)
	return nil
}

// wait waits for mcpd to exit and returns its exit error.
func (d *daemon) wait() error {
	d.t.Helper()
	select {
	case <-d.waited:
		return d.err
	case <-time.After(waitTimeout):
		d.t.Fatalf("mcpd did not exit within %v", waitTimeout)
		return nil
	}
}

// poll calls cond until it reports true, fails on its error or after
// waitTimeout.
func poll(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond) // polling interval, not a correctness wait
	}
}

// alive reports whether pid names a process that has not exited. A zombie
// (exited, not yet reaped by whoever inherited it) counts as dead.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// Format: pid (comm) state ...; comm may contain spaces and parens.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+2 >= len(s) {
		return true
	}
	return s[i+2] != 'Z' && s[i+2] != 'X'
}

// callTool runs one CallTool to its end and returns the response.
func callTool(ctx context.Context, c mcpdv1.McpdClient, req *mcpdv1.CallToolRequest) (*mcpdv1.McpResponse, []string, error) {
	stream, err := c.CallTool(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	var progress []string
	var resp *mcpdv1.McpResponse
	for {
		ev, err := stream.Recv()
		if err == io.EOF {
			if resp == nil {
				return nil, progress, errors.New("stream ended without a response")
			}
			return resp, progress, nil
		}
		if err != nil {
			return nil, progress, err
		}
		if p := ev.GetProgressJson(); p != "" {
			progress = append(progress, p)
		}
		if r := ev.GetResponse(); r != nil {
			resp = r
		}
	}
}

// text returns the text of a tool result's single text content.
func text(t *testing.T, resp *mcpdv1.McpResponse) string {
	t.Helper()
	if resp.GetError() != nil {
		t.Fatalf("MCP error: %v", resp.GetError())
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(resp.GetResultJson()), &r); err != nil {
		t.Fatalf("result %q: %v", resp.GetResultJson(), err)
	}
	if len(r.Content) != 1 || r.Content[0].Type != "text" {
		t.Fatalf("result %s: want one text content", resp.GetResultJson())
	}
	return r.Content[0].Text
}

func echoArgs(msg string) string {
	b, _ := json.Marshal(map[string]string{"message": msg})
	return string(b)
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}
