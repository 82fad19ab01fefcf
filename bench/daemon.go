package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"google.golang.org/grpc"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// serverConfig is one entry of the temporary config's mcpServers map.
type serverConfig struct {
	Command   string   `json:"command"`
	Args      []string `json:"args,omitempty"`
	Autostart bool     `json:"autostart,omitempty"`
}

// daemon is one mcpd the benchmark started on a temporary socket.
type daemon struct {
	cmd     *exec.Cmd
	dir     string
	socket  string
	logPath string
	started time.Time
	// ready is how long from exec to the first answered health check.
	ready time.Duration
	done  chan struct{} // closed when cmd.Wait returned
	reg   *registry
	// conn is the daemon's first app connection (more with app()).
	conn  *grpc.ClientConn
	conns []*grpc.ClientConn
	// httpAddr is where its HTTP face listens (--http-listen); "" for none.
	httpAddr string
	// metricsAddr is where it serves /metrics; "" for none.
	metricsAddr string
	// cfgPath is its config file (rewritten for reloads).
	cfgPath string
}

// startDaemon writes a config with servers into a fresh temporary
// directory, starts mcpdBin on a socket there, and waits until the health
// service answers. httpAddr, if not empty, is passed as --http-listen.
func startDaemon(ctx context.Context, reg *registry, mcpdBin string, servers map[string]serverConfig, httpAddr ...string) (*daemon, error) {
	var ds daemonSettings
	if len(httpAddr) > 0 {
		ds.httpAddr = httpAddr[0]
	}
	return startDaemonWith(ctx, reg, mcpdBin, servers, ds)
}

// daemonSettings are startDaemonWith's optional settings.
type daemonSettings struct {
	httpAddr string   // --http-listen; "" for off
	env      []string // added to mcpd's environment (MCPD_CPUPROFILE=...)
	// metricsAddr is --metrics-listen (a loopback HOST:PORT); "" for off.
	metricsAddr string
}

// startDaemonWith is startDaemon with ds.
func startDaemonWith(ctx context.Context, reg *registry, mcpdBin string, servers map[string]serverConfig, ds daemonSettings) (*daemon, error) {
	return startDaemonConfig(ctx, reg, mcpdBin, map[string]any{"mcpServers": servers}, ds)
}

// startDaemonConfig starts mcpd on doc, its whole config file, in a fresh
// temporary directory that holds its socket, log and state.
func startDaemonConfig(ctx context.Context, reg *registry, mcpdBin string, doc any, ds daemonSettings) (*daemon, error) {
	dir, err := os.MkdirTemp("", "mcpd-bench-")
	if err != nil {
		return nil, fmt.Errorf("temp dir: %w", err)
	}
	cfg, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		return nil, fmt.Errorf("write config: %w", err)
	}
	d := &daemon{
		cfgPath: cfgPath,
		dir:     dir,
		socket:  filepath.Join(dir, "mcpd.sock"),
		logPath: filepath.Join(dir, "mcpd.log"),
		done:    make(chan struct{}),
		reg:     reg,
	}
	logf, err := os.Create(d.logPath)
	if err != nil {
		return nil, fmt.Errorf("create log: %w", err)
	}
	defer logf.Close()
	// The audit log (on by default) and the pin book go to the temporary
	// directory, never to the user's state.
	args := []string{"--config", cfgPath, "--socket", d.socket, "--log-level", "warn",
		"--state-dir", filepath.Join(dir, "state"), "--http-listen", "off"}
	if ds.httpAddr != "" {
		d.httpAddr = ds.httpAddr
		args[len(args)-1] = d.httpAddr
	}
	if ds.metricsAddr != "" {
		args = append(args, "--metrics-listen", ds.metricsAddr)
		d.metricsAddr = ds.metricsAddr
	}
	d.cmd = exec.Command(mcpdBin, args...)
	if len(ds.env) > 0 {
		d.cmd.Env = append(os.Environ(), ds.env...)
	}
	d.cmd.Stdout = logf
	d.cmd.Stderr = logf
	// If the benchmark dies, its mcpd (and, through mcpd's own
	// parent-death signal, every child) dies too.
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	d.started = time.Now()
	if err := d.cmd.Start(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, fmt.Errorf("start mcpd: %w", err)
	}
	reg.add(d.cmd.Process.Pid)
	go func() { // owned: stop waits for done
		_ = d.cmd.Wait()
		close(d.done)
	}()

	if err := d.waitReady(ctx); err != nil {
		d.stop()
		return nil, err
	}
	return d, nil
}

// waitReady polls the socket until it accepts a connection, then makes one
// health check on a fresh connection; ready is the time from exec to its
// answer.
func (d *daemon) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		select {
		case <-d.done:
			return fmt.Errorf("mcpd exited during startup: %s", d.logTail())
		default:
		}
		if err := waitSocket(ctx, d.socket, 0); err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("mcpd socket not answering after 15s: %s", d.logTail())
		}
		time.Sleep(200 * time.Microsecond)
	}
	conn, err := d.app()
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{}); err != nil {
		return fmt.Errorf("mcpd health check: %w", err)
	}
	d.ready = time.Since(d.started)
	d.conn = conn
	return nil
}

// app opens one more client connection (one "app") to the daemon.
func (d *daemon) app() (*grpc.ClientConn, error) {
	conn, err := apiclient.Dial(d.socket)
	if err != nil {
		return nil, err
	}
	d.conns = append(d.conns, conn)
	return conn, nil
}

// client is the MCP API client on the first connection.
func (d *daemon) client() mcpdv1.McpdClient { return mcpdv1.NewMcpdClient(d.conn) }

// pid is mcpd's process id.
func (d *daemon) pid() int { return d.cmd.Process.Pid }

// serverPid returns the pid of server name's child (0 if not running) and
// records it for the final check.
func (d *daemon) serverPid(ctx context.Context, name string) (int, error) {
	st, err := d.client().GetStatus(ctx, &mcpdv1.GetStatusRequest{})
	if err != nil {
		return 0, fmt.Errorf("mcpd status: %w", err)
	}
	for _, s := range st.GetServers() {
		if s.GetName() == name {
			d.reg.add(int(s.GetPid()))
			return int(s.GetPid()), nil
		}
	}
	return 0, fmt.Errorf("mcpd status: no server %q", name)
}

// callEcho calls server's echo tool through mcpd and reads the stream to
// its end.
func callEcho(ctx context.Context, c mcpdv1.McpdClient, server string) error {
	stream, err := c.CallTool(ctx, &mcpdv1.CallToolRequest{Server: server, Tool: "echo", ArgumentsJson: echoArgs})
	if err != nil {
		return fmt.Errorf("call echo on %s through mcpd: %w", server, err)
	}
	var resp *mcpdv1.McpResponse
	for {
		ev, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("call echo on %s through mcpd: %w", server, err)
		}
		if r := ev.GetResponse(); r != nil {
			resp = r
		}
	}
	if resp == nil {
		return fmt.Errorf("call echo on %s through mcpd: no response", server)
	}
	if e := resp.GetError(); e != nil {
		return fmt.Errorf("call echo on %s through mcpd: mcp error %d: %s", server, e.GetCode(), e.GetMessage())
	}
	return checkEcho(server, resp.GetResultJson())
}

// callEchoUnary calls server's echo tool through mcpd's unary CallToolUnary.
func callEchoUnary(ctx context.Context, c mcpdv1.McpdClient, server string) error {
	resp, err := c.CallToolUnary(ctx, &mcpdv1.CallToolRequest{Server: server, Tool: "echo", ArgumentsJson: echoArgs})
	if err != nil {
		return fmt.Errorf("call echo on %s through mcpd (unary): %w", server, err)
	}
	if e := resp.GetError(); e != nil {
		return fmt.Errorf("call echo on %s through mcpd (unary): mcp error %d: %s", server, e.GetCode(), e.GetMessage())
	}
	return checkEcho(server, resp.GetResultJson())
}

// stop sends SIGTERM to mcpd (which stops its children), waits for it to
// exit (SIGKILL to its pid after 10s), and removes its directory. Child
// pids were recorded in the registry and are checked at the end.
func (d *daemon) stop() {
	for _, c := range d.conns {
		_ = c.Close()
	}
	// Record whatever mcpd runs right now (children, wrappers).
	d.reg.add(descendants(d.pid())...)
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		_ = d.cmd.Process.Kill()
		<-d.done
	}
	_ = os.RemoveAll(d.dir)
}

// logTail returns the end of mcpd's log, for error messages.
func (d *daemon) logTail() string {
	b, _ := os.ReadFile(d.logPath)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// connectApps opens n app connections to d, each its own, and makes each
// one's first call with call (so that the connection is open); closeAll
// closes the ones opened, also after an error.
func connectApps(d *daemon, n int, call func(mcpdv1.McpdClient) error) (closeAll func(), err error) {
	conns := make([]*grpc.ClientConn, 0, n)
	closeAll = func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}
	for range n {
		conn, err := dialApp(d.socket)
		if err != nil {
			return closeAll, err
		}
		conns = append(conns, conn)
		if err := call(mcpdv1.NewMcpdClient(conn)); err != nil {
			return closeAll, err
		}
	}
	return closeAll, nil
}

// dialApp opens a client connection to mcpd's socket at path.
func dialApp(path string) (*grpc.ClientConn, error) { return apiclient.Dial(path) }
