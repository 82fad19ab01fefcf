package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// sharedConfig writes a config of fake servers shared per app ("per", and
// "capped" with maxInstances 1) and per root ("ws").
func sharedConfig(t *testing.T, dir string) string {
	t.Helper()
	bin, args := fakemcp.Command()
	entry := func(extra map[string]any) map[string]any {
		e := map[string]any{"command": bin, "args": args,
			"env": map[string]string{fakemcp.EnvMode: "legacy", "GORACE": "atexit_sleep_ms=0"}}
		for k, v := range extra {
			e[k] = v
		}
		return e
	}
	data, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"per":    entry(map[string]any{"share": "client"}),
		"capped": entry(map[string]any{"share": "client", "maxInstances": 1}),
		"ws":     entry(map[string]any{"share": "root"}),
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "config.json")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// toolCallsSeen is the number of tools/call requests the instance serving
// the app behind c has received, this one included.
func toolCallsSeen(t *testing.T, c mcpdv1.McpdClient, app, server string) int {
	t.Helper()
	ctx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", app)
	resp, _, err := callTool(ctx, c, &mcpdv1.CallToolRequest{Server: server, Tool: "stats"})
	if err != nil {
		t.Fatalf("stats of %s on %s: %v", app, server, err)
	}
	var st fakemcp.Stats
	if err := json.Unmarshal([]byte(text(t, resp)), &st); err != nil {
		t.Fatal(err)
	}
	return st.Methods["tools/call"]
}

func instancesOf(d *daemon, c mcpdv1.McpdClient, server string) map[string]*mcpdv1.ServerStatus {
	out := map[string]*mcpdv1.ServerStatus{}
	for _, in := range d.serverStatus(c, server).GetInstances() {
		out[in.GetInstance()] = in
	}
	return out
}

// Two apps on a "client" server get two children with their own state,
// the same app on two connections one; a "root" server runs one child per
// root, in it; maxInstances refuses the next app; an app's instance goes
// when it leaves; and a SIGKILLed mcpd leaves no instance behind.
func TestInstancesPerAppAndRoot(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	socket := filepath.Join(dir, "run", "mcpd.sock")
	d := spawnDaemon(t, socket, sharedConfig(t, dir))
	d.waitServing()
	a1, a2 := d.client(), d.client() // one app's two connections
	connB := d.dial()
	b := mcpdv1.NewMcpdClient(connB)

	for _, c := range []mcpdv1.McpdClient{a1, a2} {
		ctx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", "app-a")
		if _, _, err := callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "per", Tool: "echo", ArgumentsJson: echoArgs("a")}); err != nil {
			t.Fatal(err)
		}
	}
	if got := toolCallsSeen(t, b, "app-b", "per"); got != 1 {
		t.Errorf("app b's instance saw %d calls, want only its own 1", got)
	}
	if got := toolCallsSeen(t, a2, "app-a", "per"); got != 3 {
		t.Errorf("app a's instance saw %d calls, want its 3", got)
	}
	pid := strconv.Itoa(os.Getpid())
	keyA, keyB := "app-a (pid "+pid+")", "app-b (pid "+pid+")"
	per := instancesOf(d, a1, "per")
	if len(per) != 2 || per[keyA] == nil || per[keyB] == nil || per[keyA].GetPid() == per[keyB].GetPid() {
		t.Fatalf("instances of per = %v, want %q and %q with their own pids", per, keyA, keyB)
	}

	// maxInstances: app b may not start a second instance of capped.
	ctxA := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", "app-a")
	if _, _, err := callTool(ctxA, a1, &mcpdv1.CallToolRequest{Server: "capped", Tool: "echo", ArgumentsJson: echoArgs("x")}); err != nil {
		t.Fatal(err)
	}
	ctxB := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", "app-b")
	_, _, err := callTool(ctxB, b, &mcpdv1.CallToolRequest{Server: "capped", Tool: "echo", ArgumentsJson: echoArgs("y")})
	if status.Code(err) != codes.ResourceExhausted || !strings.Contains(err.Error(), "maxInstances of 1") {
		t.Errorf("a second app on capped: %v, want RESOURCE_EXHAUSTED naming maxInstances", err)
	}

	// Roots: one child per root, started in it.
	roots := []string{filepath.Join(dir, "r1"), filepath.Join(dir, "r2")}
	for _, r := range roots {
		if err := os.Mkdir(r, 0o700); err != nil {
			t.Fatal(err)
		}
		for range 2 {
			ctx := metadata.AppendToOutgoingContext(ctxT(t), "mcpd-client-name", "app-a", "mcpd-root", r)
			if _, _, err := callTool(ctx, a1, &mcpdv1.CallToolRequest{Server: "ws", Tool: "echo", ArgumentsJson: echoArgs("r")}); err != nil {
				t.Fatal(err)
			}
		}
	}
	ws := instancesOf(d, a1, "ws")
	if len(ws) != 2 {
		t.Fatalf("instances of ws = %v, want one per root", ws)
	}
	for _, r := range roots {
		in := ws[r]
		if in == nil || in.GetRoot() != r {
			t.Fatalf("no instance for root %s: %v", r, ws)
		}
		if cwd, err := os.Readlink("/proc/" + strconv.Itoa(int(in.GetPid())) + "/cwd"); err != nil || cwd != r {
			t.Errorf("instance of %s runs in %q (%v)", r, cwd, err)
		}
	}

	// App b leaves: its instance and child go.
	pidB := int(per[keyB].GetPid())
	connB.Close()
	poll(t, "app b's instance to go", func() (bool, error) {
		_, ok := instancesOf(d, a1, "per")[keyB]
		return !ok && !alive(pidB), nil
	})

	// SIGKILL: the next mcpd on the socket kills what is left.
	var pids []int
	for _, server := range []string{"per", "capped", "ws"} {
		for _, in := range instancesOf(d, a1, server) {
			pids = append(pids, int(in.GetPid()))
		}
	}
	waitRecorded(t, socket, pids)
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	d.wait()
	empty := filepath.Join(dir, "empty.json")
	if err := os.WriteFile(empty, []byte(`{"mcpServers": {}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	next := exec.Command(mcpdBin, "--socket", socket, "--config", empty, "--http-listen", "off", "--state-dir", filepath.Join(dir, "state"))
	next.Env = daemonEnv()
	spawnCmd(t, next, socket, empty).waitServing()
	for _, p := range pids {
		poll(t, "instance child "+strconv.Itoa(p)+" to die", func() (bool, error) { return !alive(p), nil })
	}
}
