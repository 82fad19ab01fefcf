package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/paths"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

func TestConcurrentClientsGetTheirOwnAnswers(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, map[string]server{"echo": {Mode: "dual"}})
	const n = 50
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		c := d.client() // one connection per app
		wg.Go(func() {
			msg := fmt.Sprintf("message from app %d", i)
			resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs(msg)})
			if err != nil {
				errs <- fmt.Errorf("app %d: %v", i, err)
				return
			}
			if resp.GetError() != nil {
				errs <- fmt.Errorf("app %d: MCP error %v", i, resp.GetError())
				return
			}
			var r struct {
				Content []struct{ Text string } `json:"content"`
			}
			if err := json.Unmarshal([]byte(resp.GetResultJson()), &r); err != nil || len(r.Content) != 1 || r.Content[0].Text != msg {
				errs <- fmt.Errorf("app %d got %s, want its own %q", i, resp.GetResultJson(), msg)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// One child served them all.
	if st := d.serverStatus(d.client(), "echo"); st.GetRestarts() != 0 || st.GetPid() == 0 {
		t.Errorf("echo status = %v", st)
	}
}

func TestCancelReachesChild(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, map[string]server{"fake": {Mode: "dual"}})
	c := d.client()

	ctx, cancel := context.WithCancel(ctxT(t))
	defer cancel()
	stream, err := c.CallTool(ctx, &mcpdv1.CallToolRequest{Server: "fake", Tool: "sleep", ArgumentsJson: `{"ms": 600000}`})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the child has read the call (it logs "recv tools/call <id>").
	poll(t, "the child to receive the call", func() (bool, error) {
		logs, err := c.GetLogs(ctxT(t), &mcpdv1.GetLogsRequest{Name: "fake"})
		if err != nil {
			return false, nil // not started yet
		}
		for _, l := range logs.GetLines() {
			if strings.HasPrefix(l.GetText(), "recv tools/call") {
				return true, nil
			}
		}
		return false, nil
	})
	cancel()
	if _, err := stream.Recv(); status.Code(err) != codes.Canceled {
		t.Fatalf("cancelled call ended with %v, want Canceled", err)
	}

	// The child reports the notifications/cancelled it received.
	poll(t, "the child to see notifications/cancelled", func() (bool, error) {
		resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "fake", Tool: "stats"})
		if err != nil {
			return false, err
		}
		var stats struct {
			Methods   map[string]int    `json:"methods"`
			Cancelled []json.RawMessage `json:"cancelled"`
		}
		if err := json.Unmarshal([]byte(text(t, resp)), &stats); err != nil {
			return false, err
		}
		return len(stats.Cancelled) == 1 && stats.Methods["notifications/cancelled"] == 1, nil
	})
}

func TestProgressReachesCaller(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, map[string]server{"fake": {Mode: "dual"}})
	resp, progress, err := callTool(ctxT(t), d.client(), &mcpdv1.CallToolRequest{
		Server: "fake", Tool: "progress", ArgumentsJson: `{"count": 3}`, MetaJson: `{"progressToken": "my-token"}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, resp); got != "done" {
		t.Errorf("result %q", got)
	}
	if len(progress) != 3 {
		t.Fatalf("progress events = %v, want 3", progress)
	}
	for i, p := range progress {
		var n struct {
			Token    string `json:"progressToken"`
			Progress int    `json:"progress"`
		}
		if err := json.Unmarshal([]byte(p), &n); err != nil || n.Token != "my-token" || n.Progress != i+1 {
			t.Errorf("progress %d = %s: want the app's own token and progress %d", i, p, i+1)
		}
	}
}

func TestKilledChildRestartsOnNextCall(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, map[string]server{"echo": {Mode: "dual"}})
	c := d.client()
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs("one")})
	if err != nil || text(t, resp) != "one" {
		t.Fatalf("first call: %v %v", resp, err)
	}
	old := d.serverStatus(c, "echo").GetPid()
	if old <= 0 {
		t.Fatalf("no pid in status")
	}
	if err := syscall.Kill(int(old), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	poll(t, "mcpd to notice the exit", func() (bool, error) {
		st := d.serverStatus(c, "echo")
		return st.GetPid() != old, nil
	})
	resp, _, err = callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs("two")})
	if err != nil {
		t.Fatalf("call after SIGKILL: %v", err)
	}
	if got := text(t, resp); got != "two" {
		t.Errorf("got %q", got)
	}
	st := d.serverStatus(c, "echo")
	if st.GetPid() == old || st.GetPid() <= 0 || st.GetState() != mcpdv1.ServerState_SERVER_STATE_READY {
		t.Errorf("after restart: pid %d (old %d), state %v", st.GetPid(), old, st.GetState())
	}
	if alive(int(old)) {
		t.Errorf("killed child %d not reaped", old)
	}
}

func TestCrashLoopReported(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, map[string]server{
		"broken": {Mode: "crashonstart", Autostart: true},
		"echo":   {Mode: "dual"},
	})
	c := d.client()
	poll(t, "broken to enter crashloop", func() (bool, error) {
		return d.serverStatus(c, "broken").GetState() == mcpdv1.ServerState_SERVER_STATE_CRASHLOOP, nil
	})
	st := d.serverStatus(c, "broken")
	if st.GetLastExit() == "" || st.GetRestarts() == 0 {
		t.Errorf("crashloop status lacks the exit and restarts: %v", st)
	}
	_, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "broken", Tool: "echo", ArgumentsJson: echoArgs("x")})
	if status.Code(err) != codes.Unavailable || !strings.Contains(status.Convert(err).Message(), "broken") {
		t.Errorf("call to a crash-looping server = %v, want UNAVAILABLE naming it", err)
	}
	// The aggregate list reports it instead of failing.
	lists, err := c.ListTools(ctxT(t), &mcpdv1.ListToolsRequest{})
	if err != nil {
		t.Fatalf("ListTools over all servers: %v", err)
	}
	got := map[string]*mcpdv1.ServerList{}
	for _, l := range lists.GetServers() {
		got[l.GetServer()] = l
	}
	if got["broken"].GetUnavailable() == "" {
		t.Errorf("broken entry = %v, want unavailable", got["broken"])
	}
	if !strings.Contains(got["echo"].GetItemsJson(), `"echo"`) {
		t.Errorf("echo entry = %v, want its tools", got["echo"])
	}
}

func TestKilledDaemonLeavesNoChildren(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, map[string]server{
		"a": {Mode: "dual", Autostart: true},
		"b": {Mode: "legacy,ignorestdin,ignoreterm", Autostart: true},
	})
	c := d.client()
	var pids []int
	poll(t, "both children ready", func() (bool, error) {
		pids = pids[:0]
		for _, s := range d.status(c).GetServers() {
			if s.GetState() != mcpdv1.ServerState_SERVER_STATE_READY {
				return false, nil
			}
			pids = append(pids, int(s.GetPid()))
		}
		return len(pids) == 2, nil
	})
	if err := d.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	d.wait()
	for _, pid := range pids {
		poll(t, fmt.Sprintf("child %d to die with mcpd", pid), func() (bool, error) { return !alive(pid), nil })
	}
}

func TestSocketPermissions(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, nil)
	for _, c := range []struct {
		path string
		want os.FileMode
	}{{filepath.Dir(d.socket), 0o700}, {d.socket, 0o600}} {
		fi, err := os.Stat(c.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != c.want {
			t.Errorf("%s: mode %04o, want %04o", c.path, got, c.want)
		}
	}
	st := d.status(d.client())
	if st.GetSocketPath() != d.socket || st.GetConfigPath() != d.config || st.GetPid() != int64(d.cmd.Process.Pid) {
		t.Errorf("status = socket %q config %q pid %d", st.GetSocketPath(), st.GetConfigPath(), st.GetPid())
	}
}

func TestSecondDaemonRefuses(t *testing.T) {
	skipShort(t)
	first := startDaemon(t, map[string]server{"echo": {Mode: "dual"}})
	second := spawnDaemon(t, first.socket, first.config)
	err := second.wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("second mcpd exited with %v, want a non-zero status", err)
	}
	if want := "mcpd: another mcpd is already listening on " + first.socket; !strings.Contains(second.stderr.String(), want) {
		t.Errorf("second mcpd output %q lacks %q", second.stderr.String(), want)
	}
	// The first keeps serving.
	resp, _, err := callTool(ctxT(t), first.client(), &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs("still here")})
	if err != nil || text(t, resp) != "still here" {
		t.Fatalf("first mcpd after the second tried: %v %v", resp, err)
	}
}

func TestStaleSocketReplaced(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	socket := filepath.Join(dir, "run", "mcpd.sock")
	if err := paths.EnsureSocketDir(filepath.Dir(socket)); err != nil {
		t.Fatal(err)
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	l.SetUnlinkOnClose(false)
	l.Close() // a socket file nobody listens on, as a killed daemon leaves
	d := spawnDaemon(t, socket, writeConfig(t, dir, nil))
	d.waitServing()
}

// TestInvalidServerRunsTheRest: a server without its required "command"
// does not stop mcpd: it is failed with the reason and status says so,
// and a good server beside it serves.
func TestInvalidServerRunsTheRest(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	config := filepath.Join(dir, "config.json")
	data := configJSON(t, map[string]entry{"good": {mode: "legacy"}, "x": {extra: map[string]any{"command": nil}}})
	data = bytes.Replace(data, []byte(`"command": null,`), nil, 1) // x: no command at all
	if err := os.WriteFile(config, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), config)
	d.waitServing()
	if resp, _, err := callTool(ctxT(t), d.client(), &mcpdv1.CallToolRequest{Server: "good", Tool: "echo", ArgumentsJson: echoArgs("hi")}); err != nil || text(t, resp) != "hi" {
		t.Errorf("call to the good server beside it: %v %v", resp, err)
	}
	s := d.serverStatus(d.client(), "x")
	if s.GetState() != mcpdv1.ServerState_SERVER_STATE_FAILED || s.GetConfigError() != `missing required key "command"` {
		t.Errorf("x: state %s config_error %q, want failed for the missing command", s.GetState(), s.GetConfigError())
	}
}

// TestInvalidFlagExits: a bad flag value is a usage error, which mcpd
// exits 2 for, naming it.
func TestInvalidFlagExits(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), filepath.Join(dir, "config.json"), "--log-level", "loud")
	err := d.wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("mcpd with a bad flag exited with %v, want status 2", err)
	}
	if out := d.stderr.String(); !strings.Contains(out, `mcpd: invalid --log-level "loud"`) {
		t.Errorf("output %q does not name the flag after \"mcpd: \"", out)
	}
}

func TestMissingConfigRunsEmpty(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), filepath.Join(dir, "nope.json"))
	d.waitServing()
	if st := d.status(d.client()); len(st.GetServers()) != 0 || st.GetConfigError() != "" {
		t.Errorf("status = %v, want no servers and no config error", st)
	}
	if out := d.stderr.String(); !strings.Contains(out, "no config file") || !strings.Contains(out, filepath.Join(dir, "nope.json")) {
		t.Errorf("log does not say where to put the config: %s", out)
	}
}

func TestSIGTERMStopsEverything(t *testing.T) {
	skipShort(t)
	const grace = 300 * time.Millisecond
	d := startDaemon(t, map[string]server{
		"a": {Mode: "dual", Autostart: true, ShutdownGrace: grace.String()},
		// Ignores stdin EOF and SIGTERM: only the final SIGKILL stops it.
		"stubborn": {Mode: "legacy,ignorestdin,ignoreterm", Autostart: true, ShutdownGrace: grace.String()},
	})
	c := d.client()
	var pids []int
	poll(t, "children ready", func() (bool, error) {
		pids = pids[:0]
		for _, s := range d.status(c).GetServers() {
			if s.GetState() != mcpdv1.ServerState_SERVER_STATE_READY {
				return false, nil
			}
			pids = append(pids, int(s.GetPid()))
		}
		return len(pids) == 2, nil
	})
	start := time.Now()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(); err != nil {
		t.Fatalf("mcpd after SIGTERM: %v, want exit status 0", err)
	}
	took := time.Since(start)
	bound := 2*grace + time.Second
	t.Logf("shutdown took %v (bound 2×shutdownGrace+1s = %v)", took, bound)
	// The stop sequence is timer-driven, so only a hang (a drain or a
	// stop sequence waiting on something that never comes) overshoots by
	// many seconds; the generous slack keeps a loaded machine running
	// race-enabled binaries from failing this.
	if slack := 10 * time.Second; took > bound+slack {
		t.Errorf("shutdown took %v, more than 2×shutdownGrace+1s = %v (+%v slack)", took, bound, slack)
	}
	for _, pid := range pids {
		if alive(pid) {
			t.Errorf("child %d alive after mcpd exited", pid)
		}
	}
	if _, err := os.Lstat(d.socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket file left behind: %v", err)
	}
}

func TestHealthAndReflection(t *testing.T) {
	skipShort(t)
	d := startDaemon(t, nil)
	conn := d.dial()
	resp, err := healthpb.NewHealthClient(conn).Check(ctxT(t), &healthpb.HealthCheckRequest{Service: "mcpd.v1.Mcpd"})
	if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health = %v, %v", resp, err)
	}
	stream, err := reflectionpb.NewServerReflectionClient(conn).ServerReflectionInfo(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	stream.CloseSend()
	var found bool
	for _, s := range r.GetListServicesResponse().GetService() {
		found = found || s.GetName() == "mcpd.v1.Mcpd"
	}
	if !found {
		t.Errorf("reflection services = %v, want mcpd.v1.Mcpd", r.GetListServicesResponse().GetService())
	}
}

func TestOtherUIDRejected(t *testing.T) {
	skipShort(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid; internal/api's TestRejectedPeerCannotCall covers the check with a fake uid")
	}
	d := startDaemon(t, nil)
	// Open the file permissions, so that only the SO_PEERCRED check stands
	// between another user and the API.
	for _, dir := range []string{d.dir, filepath.Dir(d.socket)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(d.socket, 0o666); err != nil {
		t.Fatal(err)
	}
	getStatusAs := helperAs(t, "getstatus", d.socket)
	if got := getStatusAs(0); got != codes.OK.String() {
		t.Fatalf("GetStatus as our own uid = %s, want OK", got)
	}
	if got := getStatusAs(65534); got != codes.Unavailable.String() {
		t.Errorf("GetStatus as uid 65534 = %s, want Unavailable (handshake rejected)", got)
	}
	// The handshake, not the file permissions, turned it away.
	poll(t, "mcpd to log the rejection", func() (bool, error) {
		for _, line := range strings.Split(d.stderr.String(), "\n") {
			if strings.Contains(line, `"connection rejected"`) && strings.Contains(line, `"uid":65534`) {
				return true, nil
			}
		}
		return false, nil
	})
}

// helperAs returns a function that runs the helper mode of a copy of
// this test binary, which another user can execute, as uid against
// socket, and returns what it printed.
func helperAs(t *testing.T, mode, socket string) func(uid int) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := tempdir.Short(t)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(uid int) string {
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Env = append(daemonEnv(), envHelper+"="+mode, paths.EnvSocket+"="+socket)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client as uid %d: %v", uid, err)
		}
		return strings.TrimSpace(string(out))
	}
}

func TestSocketActivation(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	socket := filepath.Join(dir, "act.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: socket, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	f, err := l.File()
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	config := writeConfig(t, dir, map[string]server{"echo": {Mode: "dual"}})
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(daemonEnv(), envHelper+"=activate", envArgs+"="+strings.Join([]string{mcpdBin, "--config", config, "--http-listen", "off", "--state-dir", filepath.Join(dir, "state")}, "\n"))
	cmd.ExtraFiles = []*os.File{f} // fd 3, as systemd passes it
	d := spawnCmd(t, cmd, socket, config)
	d.waitServing()
	c := d.client()
	st := d.status(c)
	if st.GetSocketPath() != socket {
		t.Errorf("socket_path = %q, want the activated %q", st.GetSocketPath(), socket)
	}
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs("activated")})
	if err != nil || text(t, resp) != "activated" {
		t.Fatalf("call: %v %v", resp, err)
	}
	// The child must not see the activation variables.
	st = d.status(c)
	pid := st.GetServers()[0].GetPid()
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(environ), "\x00") {
		if strings.HasPrefix(kv, "LISTEN_") {
			t.Errorf("child environment has %s", kv)
		}
	}
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := d.wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// Helper modes of the re-executed test binary.
const (
	envHelper = "MCPD_E2E_HELPER"
	// envArgs holds the argv of the "activate" helper, newline-separated.
	envArgs = "MCPD_E2E_ARGS"
)

func helperMain(mode string) int {
	switch mode {
	case "getstatus":
		// GetStatus on the socket in $MCPD_SOCKET; print the status code.
		conn, err := apiclient.Dial(os.Getenv(paths.EnvSocket))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_, err = mcpdv1.NewMcpdClient(conn).GetStatus(ctx, &mcpdv1.GetStatusRequest{})
		fmt.Println(status.Code(err))
		return 0
	case "bridgeheader":
		return bridgeHeaderMain()
	case "activate":
		// Play systemd after fork: LISTEN_PID is this process, which exec
		// turns into mcpd, keeping the pid and the socket on fd 3.
		argv := strings.Split(os.Getenv(envArgs), "\n")
		os.Unsetenv(envHelper)
		os.Unsetenv(envArgs)
		os.Setenv("LISTEN_PID", strconv.Itoa(os.Getpid()))
		os.Setenv("LISTEN_FDS", "1")
		err := syscall.Exec(argv[0], argv, os.Environ())
		fmt.Fprintln(os.Stderr, "exec:", err)
		return 1
	}
	fmt.Fprintf(os.Stderr, "unknown %s=%q\n", envHelper, mode)
	return 2
}
