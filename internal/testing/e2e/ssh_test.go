package e2e

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpd-dev/mcpd/internal/bridge"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
)

// mcpd over SSH: a real sshd on a loopback port forwards mcpd's sockets
// (docs/remote-access.md), both ways. Through the forward every kind of
// client works, and a forward that is gone is named as such.

// sshd is one throwaway OpenSSH server on 127.0.0.1, run as this user.
type sshd struct {
	dir  string // keys, config, authorized_keys
	port int
	key  string // the user's private key
	ssh  string // the ssh client
}

// startSSHD starts sshd -D on a free loopback port with its own host key,
// user key and config; it is killed (by pid) when the test ends. Without
// OpenSSH the test is skipped, unless MCPD_REQUIRE_SSHD=1.
func startSSHD(t *testing.T) *sshd {
	t.Helper()
	skipShort(t)
	need := func(what string, path string, err error) string {
		if err == nil {
			return path
		}
		msg := what + " not found (apt-get install openssh-server openssh-client)"
		if os.Getenv("MCPD_REQUIRE_SSHD") == "1" {
			t.Fatalf("%s: %v (MCPD_REQUIRE_SSHD=1)", msg, err)
		}
		t.Skip(msg + " (MCPD_REQUIRE_SSHD=1 makes this a failure)")
		return ""
	}
	sshdPath, err := exec.LookPath("sshd")
	if err != nil {
		sshdPath, err = "/usr/sbin/sshd", nil
		if _, serr := os.Stat(sshdPath); serr != nil {
			err = serr
		}
	}
	sshdPath = need("sshd", sshdPath, err)
	sshPath, err := exec.LookPath("ssh")
	sshPath = need("ssh", sshPath, err)
	keygen, err := exec.LookPath("ssh-keygen")
	keygen = need("ssh-keygen", keygen, err)

	if os.Geteuid() == 0 {
		// sshd run as root wants its privilege separation directory,
		// which its service unit would create.
		if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &sshd{dir: tempdir.Short(t), ssh: sshPath}
	hostKey := filepath.Join(s.dir, "host_key")
	s.key = filepath.Join(s.dir, "user_key")
	for _, k := range []string{hostKey, s.key} {
		if out, err := exec.Command(keygen, "-q", "-t", "ed25519", "-N", "", "-f", k).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
	}
	pub, err := os.ReadFile(s.key + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(s.dir, "authorized_keys")
	if err := os.WriteFile(authorized, pub, 0o600); err != nil {
		t.Fatal(err)
	}
	for attempt := 0; ; attempt++ {
		s.port = freePort(t)
		cfg := filepath.Join(s.dir, "sshd_config")
		conf := strings.Join([]string{
			"Port " + strconv.Itoa(s.port),
			"ListenAddress 127.0.0.1",
			"HostKey " + hostKey,
			"AuthorizedKeysFile " + authorized,
			"PidFile " + filepath.Join(s.dir, "sshd.pid"),
			"StrictModes no",
			"UsePAM no",
			"PermitRootLogin prohibit-password",
			"PasswordAuthentication no",
			"KbdInteractiveAuthentication no",
			"AllowStreamLocalForwarding yes",
			"StreamLocalBindUnlink yes",
			"X11Forwarding no",
			"LogLevel VERBOSE",
			"",
		}, "\n")
		if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		out := &syncBuffer{}
		cmd := exec.Command(sshdPath, "-D", "-e", "-f", cfg)
		cmd.Stdout, cmd.Stderr = out, out
		dieWithTest(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		t.Cleanup(func() {
			cmd.Process.Kill() // by pid: the one started here
			<-exited
			if t.Failed() {
				t.Logf("sshd output:\n%s", out.String())
			}
		})
		if listening(s.port, exited) {
			return s
		}
		if attempt == 2 {
			t.Fatalf("sshd did not listen on 127.0.0.1:%d:\n%s", s.port, out.String())
		}
	}
}

// freePort is a loopback TCP port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// listening waits until something accepts on 127.0.0.1:port, false if
// exited closes first.
func listening(port int, exited <-chan struct{}) bool {
	deadline := time.Now().Add(waitTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			return false
		default:
		}
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
			c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// forward is one running `ssh -N -L|-R` session.
type forward struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	exited chan struct{}
}

// forward runs `ssh -N` with the given forwarding options (-L a:b, -R a:b)
// and waits until the socket wait exists, the forward's end ssh or sshd
// listens on.
func (s *sshd) forward(t *testing.T, wait string, opts ...string) *forward {
	t.Helper()
	args := []string{"-N", "-F", "/dev/null",
		"-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
		"-o", "ExitOnForwardFailure=yes", "-o", "StreamLocalBindUnlink=yes",
		"-o", "BatchMode=yes", "-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR",
		"-i", s.key, "-p", strconv.Itoa(s.port)}
	args = append(append(args, opts...), "127.0.0.1")
	f := &forward{cmd: exec.Command(s.ssh, args...), out: &syncBuffer{}, exited: make(chan struct{})}
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.out
	dieWithTest(f.cmd)
	if err := f.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { f.cmd.Wait(); close(f.exited) }()
	t.Cleanup(f.stop)
	poll(t, "ssh forward at "+wait, func() (bool, error) {
		select {
		case <-f.exited:
			return false, fmt.Errorf("ssh %s exited: %s", strings.Join(opts, " "), f.out.String())
		default:
		}
		_, err := os.Stat(wait)
		return err == nil, nil
	})
	return f
}

// stop ends the ssh session (by its pid) and waits for it.
func (f *forward) stop() {
	select {
	case <-f.exited:
		return
	default:
	}
	f.cmd.Process.Kill()
	<-f.exited
}

// ctlResult is one mcpdctl run.
type ctlResult struct {
	stdout, stderr string
	code           int
}

// runCtl runs mcpdctl with args; env adds variables to the test's.
func runCtl(t *testing.T, env []string, args ...string) ctlResult {
	t.Helper()
	cmd := exec.Command(mcpdctlBin, args...)
	cmd.Env = append(daemonEnv(), env...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := ctlResult{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("mcpdctl %v: %v", args, err)
	}
	return r
}

// mustCtl is runCtl that must succeed.
func mustCtl(t *testing.T, env []string, args ...string) ctlResult {
	t.Helper()
	r := runCtl(t, env, args...)
	if r.code != 0 {
		t.Fatalf("mcpdctl %v: exit %d\nstdout: %s\nstderr: %s", args, r.code, r.stdout, r.stderr)
	}
	return r
}

// startForwardedDaemon starts mcpd (the side whose mcpd is used) with the
// go-sdk server "g" and its HTTP face on a Unix socket beside the API
// socket.
func startForwardedDaemon(t *testing.T) *daemon {
	t.Helper()
	bridgeBins(t)
	dir := tempdir.Short(t)
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers":{"g":{"command":"`+gosdkBin+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "run", "mcpd.sock")
	d := spawnDaemon(t, sock, cfg, "--http-listen", "unix:"+filepath.Join(dir, "run", "http.sock"))
	d.waitServing()
	return d
}

// privateDir is a fresh 0700 directory for the forwarded sockets: the
// other machine's (or the container's) $XDG_RUNTIME_DIR/mcpd.
func privateDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(tempdir.Short(t), "mcpd")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	return dir
}

// exerciseForward uses d's mcpd through the forwarded API socket sock and
// HTTP socket httpSock: every kind of client mcpdctl offers, a host
// through mcpdctl bridge (relayed when relayed, else over gRPC) and a host
// on the HTTP face.
func exerciseForward(t *testing.T, d *daemon, sock, httpSock string, relayed bool) {
	t.Helper()
	flag := []string{"--socket", sock}
	env := []string{"MCPD_SOCKET=" + sock}

	// status, through --socket and through $MCPD_SOCKET.
	for _, run := range []struct {
		env  []string
		args []string
	}{{nil, append(flag, "status")}, {env, []string{"status"}}} {
		r := mustCtl(t, run.env, run.args...)
		if !strings.Contains(r.stdout, "g") || !strings.Contains(r.stdout, d.socket) {
			t.Errorf("status through the forward:\n%s\nwant server g and mcpd's own socket %s", r.stdout, d.socket)
		}
	}
	if r := mustCtl(t, env, "tools", "g"); !strings.Contains(r.stdout, "echo") || !strings.Contains(r.stdout, "progress") {
		t.Errorf("tools g: %s", r.stdout)
	}
	r := mustCtl(t, env, "call", "g", "progress", `{"steps":3}`)
	if !strings.Contains(r.stdout, "done 3") || strings.Count(r.stderr, "progress: ") != 3 {
		t.Errorf("call with progress: stdout %q, stderr %q; want done 3 and 3 progress lines", r.stdout, r.stderr)
	}

	// watch receives an event that a call through the forward causes.
	watch := exec.Command(mcpdctlBin, "watch", "g")
	watch.Env = append(daemonEnv(), env...)
	stdout, err := watch.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	watch.Stderr = os.Stderr
	dieWithTest(watch)
	if err := watch.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	defer func() { watch.Process.Kill(); watch.Wait() }()
	waitLine := func(want string) {
		t.Helper()
		timer := time.NewTimer(waitTimeout)
		defer timer.Stop()
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("watch ended before %q", want)
				}
				if strings.Contains(l, want) {
					return
				}
			case <-timer.C:
				t.Fatalf("watch: no line with %q", want)
			}
		}
	}
	waitLine("watching g")
	mustCtl(t, env, "call", "g", "add_tool", `{"name":"forwarded"}`)
	waitLine("g tools changed")

	// A host through mcpdctl bridge: initialize, tools/list, tools/call.
	cmd := exec.Command(mcpdctlBin, "bridge", "g")
	cmd.Env = append(daemonEnv(), env...)
	cmd.Stderr = os.Stderr
	cs := connectHost(t, cmd, "over-ssh", true, nil)
	tools, err := cs.ListTools(ctxT(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(tools.Tools, func(tl *mcp.Tool) bool { return tl.Name == "forwarded" }) {
		t.Errorf("bridge tools/list lacks the tool added through the forward")
	}
	if got := callText(t, cs, "echo", map[string]any{"message": "over ssh"}); got != "over ssh" {
		t.Errorf("bridge echo = %q", got)
	}
	transport := "grpc"
	if relayed {
		transport = "relay"
	}
	if apps := appsByTransport(t, d)[transport]; !slices.Contains(apps, "over-ssh (mcpdctl bridge)") {
		t.Errorf("apps on %s: %q, want the bridged host", transport, apps)
	}
	cs.Close()

	// A host on the HTTP face's Unix socket, forwarded.
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", httpSock)
	}}}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-over-ssh", Version: "1.0.0"}, nil)
	hs, err := client.Connect(ctxT(t), &mcp.StreamableClientTransport{Endpoint: "http://localhost/servers/g/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("HTTP face through the forward: %v", err)
	}
	defer hs.Close()
	if got := callText(t, hs, "echo", map[string]any{"message": "http over ssh"}); got != "http over ssh" {
		t.Errorf("HTTP echo = %q", got)
	}
}

// wantForwardGone checks what mcpdctl says at sock once the forward is
// gone: it names the forward, not just that mcpd is not running.
func wantForwardGone(t *testing.T, sock string) {
	t.Helper()
	r := runCtl(t, nil, "--socket", sock, "status")
	want := "nothing answers at " + sock + ": if it is an ssh forward, is the ssh session still up?"
	if r.code != 1 || !strings.Contains(r.stderr, want) {
		t.Errorf("status on a dead forward: exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
}

// A laptop uses a remote box's mcpd: ssh -L forwards the box's API
// socket only, so mcpdctl bridge serves over gRPC; the HTTP face's socket
// is forwarded too.
func TestSSHLocalForward(t *testing.T) {
	s := startSSHD(t)
	d := startForwardedDaemon(t)
	local := privateDir(t)
	sock, httpSock := filepath.Join(local, "mcpd.sock"), filepath.Join(local, "http.sock")
	f := s.forward(t, httpSock,
		"-L", sock+":"+d.socket,
		"-L", httpSock+":"+filepath.Join(filepath.Dir(d.socket), "http.sock"))
	if _, err := os.Stat(bridge.RelaySocketPath(sock)); err == nil {
		t.Fatal("a bridge socket beside the forwarded one")
	}
	exerciseForward(t, d, sock, httpSock, false)

	// A host whose bridge is up when the forward goes away is told so.
	cmd := exec.Command(mcpdctlBin, "--socket", sock, "bridge", "g")
	cmd.Env = daemonEnv()
	cmd.Stderr = os.Stderr
	cs := connectHost(t, cmd, "cut-off", true, nil)
	callText(t, cs, "echo", map[string]any{"message": "before"})

	f.stop()
	wantForwardGone(t, sock)
	_, err := cs.CallTool(ctxT(t), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "after"}})
	if err == nil || !strings.Contains(err.Error(), "if it is an ssh forward, is the ssh session still up?") {
		t.Errorf("bridge call after the forward ended: %v, want the forward named", err)
	}
}

// A remote box uses the laptop's mcpd: ssh -R forwards the API socket and
// the bridge socket beside it, so mcpdctl bridge relays.
func TestSSHRemoteForward(t *testing.T) {
	s := startSSHD(t)
	d := startForwardedDaemon(t)
	remote := privateDir(t)
	sock, httpSock := filepath.Join(remote, "mcpd.sock"), filepath.Join(remote, "http.sock")
	f := s.forward(t, httpSock,
		"-R", sock+":"+d.socket,
		"-R", bridge.RelaySocketPath(sock)+":"+bridge.RelaySocketPath(d.socket),
		"-R", httpSock+":"+filepath.Join(filepath.Dir(d.socket), "http.sock"))
	// sshd binds the remote sockets one after the other.
	poll(t, "forwarded bridge socket", func() (bool, error) {
		_, err := os.Stat(bridge.RelaySocketPath(sock))
		return err == nil, nil
	})
	exerciseForward(t, d, sock, httpSock, true)
	f.stop()
	wantForwardGone(t, sock)
}

// A forward that is up, to a socket where no mcpd listens, accepts and
// closes: mcpdctl says it is an ssh forward and its other end is silent.
func TestSSHForwardToNothing(t *testing.T) {
	s := startSSHD(t)
	bridgeBins(t)
	local := privateDir(t)
	sock := filepath.Join(local, "mcpd.sock")
	s.forward(t, sock, "-L", sock+":"+filepath.Join(privateDir(t), "absent.sock"))
	r := runCtl(t, nil, "--socket", sock, "status")
	if r.code != 1 || !strings.Contains(r.stderr, "nothing answers at "+sock+": it is an ssh forward (ssh, pid ") ||
		!strings.Contains(r.stderr, "is mcpd running there") {
		t.Errorf("status through a forward to nothing: exit %d, stderr %q", r.code, r.stderr)
	}
}

// mcpdctl connect through a forward writes bridge entries that name the
// forwarded socket, not mcpd's loopback URL (the other machine's), and
// says that the servers belong in the other mcpd's config; on mcpd's own
// socket it writes the URL.
func TestSSHConnectWritesBridgeEntries(t *testing.T) {
	s := startSSHD(t)
	bridgeBins(t)
	dir := tempdir.Short(t)
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, []byte(`{"mcpServers":{"g":{"command":"`+gosdkBin+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(freePort(t))
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), cfg, "--http-listen", "127.0.0.1:"+port)
	d.waitServing()
	c := d.client()
	poll(t, "the HTTP face serving", func() (bool, error) {
		return len(d.status(c).GetHttp().GetUrls()) > 0, nil
	})
	local := privateDir(t)
	sock := filepath.Join(local, "mcpd.sock")
	s.forward(t, sock, "-L", sock+":"+d.socket)

	connect := func(socket string) (string, ctlResult) {
		home := tempdir.Short(t)
		claude := filepath.Join(home, ".claude.json")
		entry := `{"mcpServers":{"g":{"type":"stdio","command":"` + gosdkBin + `","args":[]}}}`
		if err := os.WriteFile(claude, []byte(entry), 0o600); err != nil {
			t.Fatal(err)
		}
		r := mustCtl(t, []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
			"XDG_STATE_HOME=" + filepath.Join(home, ".state"), "MCPD_SOCKET=" + socket,
			"MCPD_CONFIG=" + filepath.Join(home, ".config", "mcpd", "config.json")}, "connect", "claude-code")
		data, err := os.ReadFile(claude)
		if err != nil {
			t.Fatal(err)
		}
		return string(data), r
	}
	direct, _ := connect(d.socket)
	if !strings.Contains(direct, "http://127.0.0.1:"+port+"/servers/g/mcp") {
		t.Errorf("connect on mcpd's own socket wrote:\n%s\nwant its URL", direct)
	}
	forwarded, r := connect(sock)
	if strings.Contains(forwarded, "http://") || !strings.Contains(forwarded, `"--socket"`) || !strings.Contains(forwarded, sock) {
		t.Errorf("connect through the forward wrote:\n%s\nwant mcpdctl --socket %s bridge", forwarded, sock)
	}
	if !strings.Contains(r.stderr, "runs at the other end of a forward") {
		t.Errorf("connect through the forward said:\n%s%s\nwant that mcpd reads its own config there", r.stdout, r.stderr)
	}
}
