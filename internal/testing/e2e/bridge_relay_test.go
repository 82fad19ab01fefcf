package e2e

import (
	"bufio"
	"encoding/json"
	"errors"
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

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/paths"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// appsByTransport is the connected apps' names, by how they reach mcpd.
func appsByTransport(t *testing.T, d *daemon) map[string][]string {
	t.Helper()
	st, err := d.client().GetStatus(ctxT(t), &mcpdv1.GetStatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, a := range st.GetApps() {
		out[a.GetTransport()] = append(out[a.GetTransport()], a.GetName())
	}
	return out
}

// mcpdctl bridge goes through mcpd's bridge socket when mcpd serves one:
// its host is an app of transport "relay", named as the gRPC bridge names
// it; MCPD_BRIDGE_RELAY=0 runs the bridge in mcpdctl over gRPC instead.
func TestBridgeRelayPath(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	if _, err := os.Stat(bridge.RelaySocketPath(d.socket)); err != nil {
		t.Fatalf("bridge socket: %v", err)
	}
	cs, _ := goHost(t, d, "relayed", true, "g")
	if got := callText(t, cs, "echo", map[string]any{"message": "via relay"}); got != "via relay" {
		t.Fatalf("echo = %q", got)
	}
	if got := appsByTransport(t, d)["relay"]; len(got) != 1 || got[0] != "relayed (mcpdctl bridge)" {
		t.Errorf("relay apps = %q, want the host named as the bridge names it", got)
	}

	cmd := bridgeCommand(d, "g")
	cmd.Env = append(cmd.Env, "MCPD_BRIDGE_RELAY=0")
	cs2 := connectHost(t, cmd, "direct", true, nil)
	if got := callText(t, cs2, "echo", map[string]any{"message": "via grpc"}); got != "via grpc" {
		t.Fatalf("echo = %q", got)
	}
	apps := appsByTransport(t, d)
	if !slices.Contains(apps["grpc"], "direct (mcpdctl bridge)") || slices.Contains(apps["relay"], "direct (mcpdctl bridge)") {
		t.Errorf("apps %v: want the MCPD_BRIDGE_RELAY=0 bridge on grpc", apps)
	}
}

// A header mcpd cannot use is answered with a clear error, which mcpdctl
// would print, and the connection closed.
func TestBridgeSocketBadHeader(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	for _, tt := range []struct {
		header, want string
		bad          bool // a header mcpd cannot read: mcpdctl runs its own bridge
	}{
		{"not json", "bad header: want one JSON object line of bridge options", true},
		{`{"names":["g"],"colour":"red"}`, `unknown field "colour"`, true},
		{`{}`, "bad header: name at least one server, or all", true},
		{`{"names":["g"],"prefix":"sometimes"}`, `prefix must be "always" or "on-collision", not "sometimes"`, true},
		{`{"names":["nope"]}`, `no such server "nope"`, false},
	} {
		got := bridgeHeader(t, bridge.RelaySocketPath(d.socket), tt.header)
		var a bridge.RelayAnswer
		if err := json.Unmarshal([]byte(got), &a); err != nil || a.OK || !strings.Contains(a.Error, tt.want) || a.BadHeader != tt.bad {
			t.Errorf("header %s: answer %q, want an error with %q, badHeader %v", tt.header, got, tt.want, tt.bad)
		}
	}
	if got := bridgeHeader(t, bridge.RelaySocketPath(d.socket), `{"names":["g"]}`); got != `{"ok":true}` {
		t.Errorf("good header: answer %q", got)
	}
}

// bridgeHeader sends header on the bridge socket at path and returns the
// answer line, or "closed" when mcpd closed the connection without one.
func bridgeHeader(t *testing.T, path, header string) string {
	t.Helper()
	got, err := sendBridgeHeader(path, header)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func sendBridgeHeader(path, header string) (string, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return "", err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(waitTimeout)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(c, "%s\n", header); err != nil {
		return "closed", nil
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "closed", nil
	}
	return strings.TrimSpace(line), nil
}

// bridgeHeaderMain is the helper that sends a good header to the bridge
// socket of $MCPD_SOCKET and prints the answer.
func bridgeHeaderMain() int {
	got, err := sendBridgeHeader(bridge.RelaySocketPath(os.Getenv(paths.EnvSocket)), `{"names":["g"]}`)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(got)
	return 0
}

// The bridge socket serves only mcpd's own uid, whatever the file
// permissions say.
func TestBridgeSocketOtherUIDRejected(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run a client as another uid; the socket's check is peercred's, which TestOtherUIDRejected and internal/peercred cover")
	}
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	sock := bridge.RelaySocketPath(d.socket)
	for _, dir := range []string{filepath.Dir(filepath.Dir(d.socket)), filepath.Dir(d.socket)} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	headerAs := helperAs(t, "bridgeheader", d.socket)
	if got := headerAs(0); got != `{"ok":true}` {
		t.Fatalf("header as our own uid: %q", got)
	}
	if got := headerAs(65534); got != "closed" {
		t.Errorf("header as uid 65534: %q, want the connection closed unanswered", got)
	}
	poll(t, "mcpd to log the rejection", func() (bool, error) {
		for _, line := range strings.Split(d.stderr.String(), "\n") {
			if strings.Contains(line, `"bridge.peercred"`) && strings.Contains(line, `"connection rejected"`) && strings.Contains(line, `"uid":65534`) {
				return true, nil
			}
		}
		return false, nil
	})
}

// When mcpd stops during a relayed call, the host's call is answered with
// an error at once, and the session goes on, served by mcpdctl itself,
// once mcpd is back.
func TestBridgeRelayCallInFlightAtRestart(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	cs, _ := goHost(t, d, "host", true, "g")
	c := d.client()
	failed := make(chan error, 1)
	go func() { // owned: the test waits for failed
		_, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "sleep", Arguments: map[string]any{"ms": 600000}})
		failed <- err
	}()
	logsContain(t, c, "g", "sleep started 600000")
	d.status(c) // record the child for the leak check
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.wait()
	select {
	case err := <-failed:
		if err == nil || !strings.Contains(err.Error(), "mcpd is not running") {
			t.Errorf("call in flight when mcpd stopped: %v, want \"mcpd is not running\"", err)
		}
	case <-ctxT(t).Done():
		t.Fatal("the call in flight was never answered")
	}
	d2 := spawnDaemon(t, d.socket, d.config)
	d2.waitServing()
	if got := callText(t, cs, "echo", map[string]any{"message": "back"}); got != "back" {
		t.Errorf("echo after restart = %q", got)
	}
	d2.status(d2.client())
}

// A modern host's open subscriptions/listen outlives an mcpd restart under
// a relayed bridge: it is not failed when the bridge socket goes, the
// bridge mcpdctl runs then takes it on (acknowledging it again under the
// host's id), and resource updates after the restart reach the host on it.
func TestBridgeRelayListenSurvivesRestart(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	stdin, stdout := pipeBridge(t, bridgeCommand(d, "g"))
	lines := make(chan map[string]json.RawMessage, 256)
	done := make(chan struct{})
	go func() { // owned: ends with the bridge's stdout; waited for below
		defer close(done)
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	t.Cleanup(func() { // before pipeBridge's: the bridge ends with its stdin
		stdin.Close()
		<-done
	})
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`
	send := func(line string) {
		t.Helper()
		if _, err := stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	// next returns the next message match takes; a failed listen fails the
	// test.
	next := func(what string, match func(m map[string]json.RawMessage) bool) {
		t.Helper()
		timeout := time.After(waitTimeout)
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatalf("the bridge exited before %s", what)
				}
				if string(m["id"]) == `"L"` && m["error"] != nil {
					t.Fatalf("the listen failed: %s", m["error"])
				}
				if match(m) {
					return
				}
			case <-timeout:
				t.Fatalf("no %s", what)
			}
		}
	}
	acked := func(m map[string]json.RawMessage) bool {
		return string(m["method"]) == `"notifications/subscriptions/acknowledged"` && strings.Contains(string(m["params"]), `"L"`)
	}
	send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + meta + `,"notifications":{"resourceSubscriptions":["test://a"]}}}`)
	next("the listen's acknowledgement", acked)

	d.status(d.client()) // record the child for the leak check
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.wait()
	next("the listen acknowledged again by the bridge mcpdctl runs", acked)
	d2 := spawnDaemon(t, d.socket, d.config)
	d2.waitServing()
	updated := func(m map[string]json.RawMessage) bool {
		return string(m["method"]) == `"notifications/resources/updated"` && strings.Contains(string(m["params"]), `"L"`)
	}
	for i := 0; ; i++ {
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"touch","arguments":{"uri":"test://a"}}}`, i, meta))
		got := false
		timeout := time.After(time.Second)
	wait:
		for {
			select {
			case m, ok := <-lines:
				if !ok {
					t.Fatal("the bridge exited")
				}
				if updated(m) {
					got = true
					break wait
				}
			case <-timeout:
				break wait
			}
		}
		if got {
			break
		}
		if i == 30 {
			t.Fatal("no resources/updated on the listen after the restart")
		}
	}
	d2.status(d2.client())
}

// mcpdctl bridge ends on SIGTERM while its stdin is still open, exiting
// 143, and its call in flight is cancelled at the child; a bridge killed
// outright has its call cancelled too (mcpd sees the relay's connection
// closed whole), relayed or run in mcpdctl over gRPC.
func TestBridgeSignalEndsItAndItsCall(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	for i, tt := range []struct {
		sig   syscall.Signal
		relay bool
	}{{syscall.SIGTERM, true}, {syscall.SIGTERM, false}, {syscall.SIGKILL, true}} {
		t.Run(fmt.Sprintf("%v relay=%v", tt.sig, tt.relay), func(t *testing.T) {
			cmd := bridgeCommand(d, "g")
			if !tt.relay {
				cmd.Env = append(cmd.Env, "MCPD_BRIDGE_RELAY=0")
			}
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdin.Close()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			ms := 600000 + i
			for _, line := range []string{
				`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}`,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":%d}}}`, ms),
			} {
				if _, err := stdin.Write([]byte(line + "\n")); err != nil {
					t.Fatal(err)
				}
			}
			logsContain(t, c, "g", fmt.Sprintf("sleep started %d", ms))
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }() // owned: waited for below
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if tt.sig == syscall.SIGTERM && (!errors.As(err, &ee) || ee.ExitCode() != 143) {
					t.Errorf("bridge exit after SIGTERM: %v, want status 143", err)
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("the bridge was still running 10 s after %v", tt.sig)
			}
			logsContain(t, c, "g", fmt.Sprintf("sleep cancelled %d", ms))
		})
	}
}

// A call in flight when mcpd stops is told mcpd is shutting down (its own
// answer), not that mcpd is not running.
func TestCallInFlightAtShutdownSaysSo(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"g": gosdkServer("")})
	c := d.client()
	cmd := exec.Command(mcpdctlBin, "--socket", d.socket, "call", "g", "sleep", "ms=600007")
	cmd.Env = daemonEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	logsContain(t, c, "g", "sleep started 600007")
	d.status(c) // record the child for the leak check
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	d.wait()
	_ = cmd.Wait()
	if !strings.Contains(stderr.String(), "mcpd is shutting down") {
		t.Errorf("mcpdctl call said %q, want \"mcpd is shutting down\"", stderr.String())
	}
}
