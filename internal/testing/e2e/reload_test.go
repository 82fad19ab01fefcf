package e2e

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// entry is one server of a reload test's config, with any extra keys.
type entry struct {
	mode  string
	extra map[string]any
}

// configJSON is a config with the given fake servers.
func configJSON(t *testing.T, servers map[string]entry) []byte {
	t.Helper()
	bin, args := fakemcp.Command()
	m := map[string]any{}
	for name, e := range servers {
		s := map[string]any{"command": bin, "args": args, "env": map[string]string{fakemcp.EnvMode: e.mode}}
		for k, v := range e.extra {
			s[k] = v
		}
		m[name] = s
	}
	data, err := json.MarshalIndent(map[string]any{"mcpServers": m}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// saveAsEditor writes data the way editors save: a temporary file in the
// same directory renamed over the config.
func saveAsEditor(t *testing.T, path string, data []byte) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.swp", filepath.Base(path)))
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// startWith starts mcpd on a config with servers.
func startWith(t *testing.T, servers map[string]entry, env ...string) *daemon {
	t.Helper()
	dir := tempdir.Short(t)
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, configJSON(t, servers), 0o600); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "run", "mcpd.sock")
	cmd := spawnCmdFor(config, socket)
	cmd.Env = append(cmd.Env, env...)
	d := spawnCmd(t, cmd, socket, config)
	d.waitServing()
	return d
}

func servers(st *mcpdv1.GetStatusResponse) map[string]*mcpdv1.ServerStatus {
	out := map[string]*mcpdv1.ServerStatus{}
	for _, s := range st.GetServers() {
		out[s.GetName()] = s
	}
	return out
}

func ready(s *mcpdv1.ServerStatus) bool {
	return s != nil && s.GetState() == mcpdv1.ServerState_SERVER_STATE_READY && s.GetPid() > 0
}

func TestReloadOnEditorSave(t *testing.T) {
	skipShort(t)
	auto := map[string]any{"autostart": true}
	d := startWith(t, map[string]entry{
		"keep":    {"dual", auto},
		"gone":    {"dual", auto},
		"cmd":     {"dual", auto},
		"timeout": {"dual", auto},
	})
	c := d.client()
	var before map[string]*mcpdv1.ServerStatus
	poll(t, "autostart servers ready", func() (bool, error) {
		before = servers(d.status(c))
		return ready(before["keep"]) && ready(before["gone"]) && ready(before["cmd"]) && ready(before["timeout"]), nil
	})

	// One save: add one, remove one, change one's process (the protocol),
	// change one's timeout only, leave one alone.
	saveAsEditor(t, d.config, configJSON(t, map[string]entry{
		"keep":    {"dual", auto},
		"added":   {"dual", auto},
		"cmd":     {"dual", map[string]any{"autostart": true, "protocol": "legacy"}},
		"timeout": {"dual", map[string]any{"autostart": true, "requestTimeout": "300ms"}},
	}))
	var after map[string]*mcpdv1.ServerStatus
	poll(t, "the new config applied", func() (bool, error) {
		after = servers(d.status(c))
		_, goneStill := after["gone"]
		return !goneStill && ready(after["added"]) && ready(after["cmd"]) && after["cmd"].GetPid() != before["cmd"].GetPid() &&
			after["cmd"].GetEra() == "legacy", nil
	})
	if after["keep"].GetPid() != before["keep"].GetPid() {
		t.Errorf("untouched server restarted: pid %d -> %d", before["keep"].GetPid(), after["keep"].GetPid())
	}
	if after["timeout"].GetPid() != before["timeout"].GetPid() {
		t.Errorf("timeout-only change restarted the server: pid %d -> %d", before["timeout"].GetPid(), after["timeout"].GetPid())
	}
	poll(t, "removed server's child gone", func() (bool, error) { return !alive(int(before["gone"].GetPid())), nil })
	poll(t, "old process of the changed server gone", func() (bool, error) { return !alive(int(before["cmd"].GetPid())), nil })

	// The new timeout is in force on the same process.
	_, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "timeout", Tool: "sleep", ArgumentsJson: `{"ms": 60000}`})
	if status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("call past the new 300ms timeout: %v, want DeadlineExceeded", err)
	}
	if pid := d.serverStatus(c, "timeout").GetPid(); pid != before["timeout"].GetPid() {
		t.Errorf("timeout server pid %d, want %d", pid, before["timeout"].GetPid())
	}
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "added", Tool: "echo", ArgumentsJson: echoArgs("new")})
	if err != nil || text(t, resp) != "new" {
		t.Errorf("call on the added server: %v %v", resp, err)
	}
}

func TestReloadRemoveLetsInFlightCallFinish(t *testing.T) {
	skipShort(t)
	d := startWith(t, map[string]entry{"slow": {"dual", map[string]any{"autostart": true}}})
	c := d.client()
	pid := 0
	poll(t, "slow ready", func() (bool, error) {
		s := d.serverStatus(c, "slow")
		pid = int(s.GetPid())
		return ready(s), nil
	})
	type result struct {
		resp *mcpdv1.McpResponse
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "slow", Tool: "echo", ArgumentsJson: `{"message": "finished", "ms": 1500}`})
		done <- result{resp, err}
	}()
	poll(t, "the call in flight", func() (bool, error) { return d.serverStatus(c, "slow").GetCallsInFlight() == 1, nil })
	saveAsEditor(t, d.config, configJSON(t, map[string]entry{}))
	poll(t, "server removed from status", func() (bool, error) { return len(d.status(c).GetServers()) == 0, nil })
	r := <-done
	if r.err != nil {
		t.Fatalf("in-flight call on a removed server failed: %v", r.err)
	}
	if got := text(t, r.resp); got != "finished" {
		t.Errorf("in-flight call = %q", got)
	}
	poll(t, "removed server's child gone", func() (bool, error) { return !alive(pid), nil })
}

func TestReloadInvalidKeepsRunningConfig(t *testing.T) {
	skipShort(t)
	d := startWith(t, map[string]entry{"echo": {"dual", nil}})
	c := d.client()
	// A file that cannot be parsed at all (a server's own problems would
	// only fail that server).
	saveAsEditor(t, d.config, []byte("{\"mcpServers\": {\"echo\": {\"command\": \"x\"}},\n  \"extra\": 1}"))
	var st *mcpdv1.GetStatusResponse
	poll(t, "config error in status", func() (bool, error) {
		st = d.status(c)
		return st.GetConfigError() != "", nil
	})
	for _, want := range []string{d.config, `unknown key "extra"`} {
		if !strings.Contains(st.GetConfigError(), want) {
			t.Errorf("config_error %q does not name %s", st.GetConfigError(), want)
		}
	}
	// The previous config keeps serving.
	resp, _, err := callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs("still here")})
	if err != nil || text(t, resp) != "still here" {
		t.Fatalf("call under the old config: %v %v", resp, err)
	}
	// mcpdctl reload (the RPC) reports the same problem and applies nothing.
	rr, err := c.ReloadConfig(ctxT(t), &mcpdv1.ReloadConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if rr.GetApplied() || len(rr.GetProblems()) != 1 || !strings.Contains(rr.GetProblems()[0].GetMessage(), `unknown key "extra"`) {
		t.Errorf("ReloadConfig = %v, want not applied with the unknown key problem", rr)
	}
	// So does a syntax error, located.
	saveAsEditor(t, d.config, []byte("{\"mcpServers\": {\n  \"echo\": {\"command\": \"x\",,}}}"))
	poll(t, "syntax error in status", func() (bool, error) {
		return strings.Contains(d.status(c).GetConfigError(), d.config+":2:27: invalid character ','"), nil
	})
	resp, _, err = callTool(ctxT(t), c, &mcpdv1.CallToolRequest{Server: "echo", Tool: "echo", ArgumentsJson: echoArgs("still")})
	if err != nil || text(t, resp) != "still" {
		t.Fatalf("call under the old config after a syntax error: %v %v", resp, err)
	}
	// A valid file clears the error.
	saveAsEditor(t, d.config, configJSON(t, map[string]entry{"echo": {"dual", nil}, "two": {"dual", nil}}))
	poll(t, "config error cleared", func() (bool, error) {
		st = d.status(c)
		return st.GetConfigError() == "" && len(st.GetServers()) == 2, nil
	})
}

func TestReloadRapidSavesApplyOnce(t *testing.T) {
	skipShort(t)
	d := startWith(t, map[string]entry{"s0": {"dual", nil}})
	c := d.client()
	const saves = 20
	for i := 1; i <= saves; i++ {
		saveAsEditor(t, d.config, configJSON(t, map[string]entry{fmt.Sprintf("s%d", i): {"dual", nil}}))
	}
	poll(t, "the last save applied", func() (bool, error) {
		names := []string{}
		for _, s := range d.status(c).GetServers() {
			names = append(names, s.GetName())
		}
		return slices.Equal(names, []string{fmt.Sprintf("s%d", saves)}), nil
	})
	// The debounce turned the burst into (nearly) one reload, never one per save.
	reloads := strings.Count(d.stderr.String(), `"config reloaded"`)
	if reloads == 0 || reloads >= saves {
		t.Errorf("%d reloads for %d rapid saves, want the burst coalesced", reloads, saves)
	}
	t.Logf("%d rapid saves, %d reload(s)", saves, reloads)
	// mcpdctl reload on an unchanged file changes nothing.
	rr, err := c.ReloadConfig(ctxT(t), &mcpdv1.ReloadConfigRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !rr.GetApplied() || len(rr.GetDiff().GetUnchanged()) != 1 || len(rr.GetDiff().GetAdded())+len(rr.GetDiff().GetRemoved()) != 0 {
		t.Errorf("ReloadConfig = %v, want applied with nothing changed", rr)
	}
}

func TestCheckConfigDiff(t *testing.T) {
	skipShort(t)
	d := startWith(t, map[string]entry{"a": {"dual", nil}, "b": {"dual", nil}})
	c := d.client()
	content := configJSON(t, map[string]entry{"a": {"dual", map[string]any{"requestTimeout": 5000}}, "c": {"dual", nil}})
	resp, err := c.CheckConfig(ctxT(t), &mcpdv1.CheckConfigRequest{Path: d.config, Content: content})
	if err != nil {
		t.Fatal(err)
	}
	diff := resp.GetDiff()
	if !resp.GetValid() || !slices.Equal(diff.GetAdded(), []string{"c"}) || !slices.Equal(diff.GetRemoved(), []string{"b"}) ||
		!slices.Equal(diff.GetUpdated(), []string{"a"}) {
		t.Errorf("CheckConfig = %v", resp)
	}
	if got := len(d.status(c).GetServers()); got != 2 {
		t.Errorf("CheckConfig applied something: %d servers", got)
	}
}

// notifyListener is a NOTIFY_SOCKET playing systemd: it collects the
// datagrams mcpd sends.
type notifyListener struct {
	conn *net.UnixConn
	msgs chan string
	done chan struct{}
}

func listenNotify(t *testing.T, path string) *notifyListener {
	t.Helper()
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	n := &notifyListener{conn: conn, msgs: make(chan string, 100), done: make(chan struct{})}
	go func() { // owned: the cleanup closes conn and waits
		defer close(n.done)
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			n.msgs <- string(buf[:k])
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-n.done
	})
	return n
}

// next returns the next datagram's assignments.
func (n *notifyListener) next(t *testing.T) []string {
	t.Helper()
	select {
	case m := <-n.msgs:
		return strings.Split(m, "\n")
	case <-time.After(waitTimeout):
		t.Fatal("no sd_notify message")
		return nil
	}
}

func (n *notifyListener) expect(t *testing.T, want string) []string {
	t.Helper()
	m := n.next(t)
	if !slices.Contains(m, want) {
		t.Fatalf("sd_notify message %q, want %s", m, want)
	}
	return m
}

func TestSdNotify(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	nl := listenNotify(t, filepath.Join(dir, "notify.sock"))
	config := filepath.Join(dir, "config.json")
	if err := os.WriteFile(config, configJSON(t, map[string]entry{"echo": {"dual", map[string]any{"autostart": true}}}), 0o600); err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(dir, "run", "mcpd.sock")
	cmd := spawnCmdFor(config, socket)
	cmd.Env = append(cmd.Env, "NOTIFY_SOCKET="+filepath.Join(dir, "notify.sock"))
	d := spawnCmd(t, cmd, socket, config)

	nl.expect(t, "READY=1")
	// READY=1 means the API answers now, without waiting.
	conn := dialSocket(t, socket)
	hc, err := healthpb.NewHealthClient(conn).Check(ctxT(t), &healthpb.HealthCheckRequest{})
	if err != nil || hc.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health right after READY=1: %v %v", hc, err)
	}
	c := mcpdv1.NewMcpdClient(conn)

	// The child never sees NOTIFY_SOCKET.
	var pid int64
	poll(t, "echo ready", func() (bool, error) {
		s := d.serverStatus(c, "echo")
		pid = s.GetPid()
		return ready(s), nil
	})
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range strings.Split(string(environ), "\x00") {
		if strings.HasPrefix(kv, "NOTIFY_SOCKET=") || strings.HasPrefix(kv, "LISTEN_") {
			t.Errorf("child environment has %s", kv)
		}
	}

	// SIGHUP: RELOADING=1, then READY=1.
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	nl.expect(t, "RELOADING=1")
	nl.expect(t, "READY=1")

	// A failed reload still ends with READY=1, plus STATUS= with the error.
	if err := os.WriteFile(config, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	// The watcher may report the same save first; take messages until the
	// failure's READY=1.
	for {
		m := nl.next(t)
		if slices.Contains(m, "READY=1") && slices.ContainsFunc(m, func(s string) bool { return strings.HasPrefix(s, "STATUS=config error: ") }) {
			break
		}
		if !slices.Contains(m, "RELOADING=1") {
			t.Fatalf("unexpected sd_notify message %q during a failed reload", m)
		}
	}

	// SIGTERM: STOPPING=1.
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for {
		m := nl.next(t)
		if slices.Contains(m, "STOPPING=1") {
			break
		}
	}
	if err := d.wait(); err != nil {
		t.Errorf("exit after SIGTERM: %v", err)
	}
}

// spawnCmdFor is the command spawnDaemon runs.
func spawnCmdFor(config, socket string) *exec.Cmd {
	cmd := exec.Command(mcpdBin, "--socket", socket, "--config", config, "--log-level", "debug", "--http-listen", "off",
		"--state-dir", filepath.Join(filepath.Dir(config), "state"))
	cmd.Env = daemonEnv()
	return cmd
}
