package e2e

import (
	"bufio"
	"context"
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
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/api"
	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/core"
	"github.com/mcpd-dev/mcpd/internal/socket"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// envTap turns the test binary into a tap: it runs the command in its
// arguments, copies stdin to it while logging "recv <method>" to stderr
// for every message, and copies its stdout back.
const envTap = "MCPD_E2E_TAP"

var (
	repoRoot string
	gosdkBin string
	nodeBin  string
)

func TestMain(m *testing.M) {
	if os.Getenv(envTap) != "" {
		os.Exit(tap(os.Args[1:]))
	}
	fakemcp.Main()
	dir, err := os.MkdirTemp("", "mcpd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err == nil {
		repoRoot = filepath.Dir(strings.TrimSpace(string(out)))
		gosdkBin = filepath.Join(dir, "gosdk")
		build := exec.Command("go", "build", "-o", gosdkBin, "./internal/testing/servers/gosdk")
		build.Dir = repoRoot
		if b, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build gosdk: %v\n%s", err, b)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	nodeBin, _ = exec.LookPath("node")
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { os.RemoveAll(dir) }))
}

// tap runs argv as a child, logging every method it receives on stdin.
func tap(argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return 1
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "tap:", err)
		return 1
	}
	r := bufio.NewReader(os.Stdin)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if i := strings.Index(string(line), `"method":"`); i >= 0 {
				rest := string(line[i+10:])
				if j := strings.IndexByte(rest, '"'); j >= 0 {
					fmt.Fprintf(os.Stderr, "tap recv %s\n", rest[:j])
				}
			}
			if _, werr := in.Write(line); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	in.Close()
	_ = cmd.Wait()
	return 0
}

// memorySpec is the npm server-memory behind the tap.
func memorySpec(t *testing.T, name string) supervisor.Spec {
	t.Helper()
	js := filepath.Join(repoRoot, "node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	if _, err := os.Stat(js); err != nil || nodeBin == "" {
		t.Skipf("server-memory not installed (npm ci): %v", err)
	}
	self, _ := os.Executable()
	return supervisor.Spec{Name: name, Command: self, Args: []string{nodeBin, js}, Protocol: "legacy",
		Env: map[string]string{envTap: "1", "MEMORY_FILE_PATH": filepath.Join(t.TempDir(), "memory.jsonl")}}
}

func fakeSpec(name, mode string) supervisor.Spec {
	cmd, args := fakemcp.Command()
	return supervisor.Spec{Name: name, Command: cmd, Args: args, Env: map[string]string{fakemcp.EnvMode: mode}}
}

func gosdkSpec(t *testing.T, name string) supervisor.Spec {
	t.Helper()
	if gosdkBin == "" {
		t.Skip("go-sdk test server not built")
	}
	return supervisor.Spec{Name: name, Command: gosdkBin, Protocol: "modern"}
}

// daemon is a supervisor and the gRPC API on a real socket.
type daemon struct {
	t    *testing.T
	sup  *supervisor.Supervisor
	path string
}

func newDaemon(t *testing.T, opts supervisor.Options) *daemon {
	t.Helper()
	log := zaptest.NewLogger(t)
	opts.Logger = log
	if opts.BackoffMin == 0 {
		opts.BackoffMin, opts.BackoffMax = 10*time.Millisecond, 50*time.Millisecond
	}
	sup := supervisor.New(opts)
	ctx, cancel := context.WithCancel(context.Background())
	runDone := make(chan error, 1)
	go func() { runDone <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-runDone; err != nil {
			t.Errorf("supervisor Run: %v", err)
		}
	})
	dir, err := os.MkdirTemp("/tmp", "e2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "s", "mcpd.sock")
	ln, err := socket.Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	// grpc-go's logging is routed once per process to the first logger
	// NewGRPCServer gets: give it one that outlives every test.
	gs := api.NewGRPCServer(core.New(sup, core.Options{Logger: log, SocketPath: path}), zap.NewNop())
	served := make(chan error, 1)
	go func() { served <- gs.Serve(ln) }()
	t.Cleanup(func() {
		gs.Stop()
		<-served
	})
	return &daemon{t: t, sup: sup, path: path}
}

// dial connects one app (one connection).
func (d *daemon) dial(opts ...grpc.DialOption) (mcpdv1.McpdClient, *grpc.ClientConn) {
	d.t.Helper()
	conn, err := apiclient.Dial(d.path, apiclient.DialOptions(opts...))
	if err != nil {
		d.t.Fatal(err)
	}
	d.t.Cleanup(func() { conn.Close() })
	return mcpdv1.NewMcpdClient(conn), conn
}

// stderrCount counts the server's stderr lines containing text.
func (d *daemon) stderrCount(server, text string) int {
	lines, err := d.sup.Logs(server, 100000)
	if err != nil {
		d.t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		if strings.Contains(l.Text, text) {
			n++
		}
	}
	return n
}

// flushStderr makes the child write one more stderr line (it logs every
// request) and waits for it, so every earlier line has been read too.
func (d *daemon) flushStderr(server, marker string) {
	d.t.Helper()
	before := d.stderrCount(server, marker)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := d.sup.Call(ctx, server, sessionRequest("tools/list", ""), supervisor.CallOptions{}); err != nil {
		d.t.Fatal(err)
	}
	waitFor(d.t, "stderr flushed", func() bool { return d.stderrCount(server, marker) > before })
}

func (d *daemon) streams() int {
	return len(d.sup.Subscriptions().Streams())
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// watcher is one Subscribe stream read by its own goroutine.
type watcher struct {
	t      *testing.T
	client mcpdv1.McpdClient
	ack    *mcpdv1.SubscriptionAck
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	events  []*mcpdv1.SubscriptionEvent
	err     error
	discard bool // keep only per-kind counts (a flood would fill memory)
	kinds   map[mcpdv1.SubscriptionEventKind]int
}

// subscribe opens a stream and waits for its acknowledgement; read=false
// leaves the stream unread after the ack (a stalled app) until resume.
func subscribe(t *testing.T, c mcpdv1.McpdClient, req *mcpdv1.SubscribeRequest, read bool) (*watcher, chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := c.Subscribe(ctx, req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	first, err := s.Recv()
	if err != nil {
		cancel()
		t.Fatalf("first event: %v", err)
	}
	if first.GetKind() != mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_ACK {
		cancel()
		t.Fatalf("first event is %v, want the acknowledgement", first.GetKind())
	}
	w := &watcher{t: t, ack: first.GetAck(), cancel: cancel, done: make(chan struct{}),
		kinds: map[mcpdv1.SubscriptionEventKind]int{}}
	resume := make(chan struct{})
	if read {
		close(resume)
	}
	go func() {
		defer close(w.done)
		select {
		case <-resume:
		case <-ctx.Done():
			return
		}
		for {
			ev, err := s.Recv()
			w.mu.Lock()
			if err != nil {
				if err != io.EOF {
					w.err = err
				}
				w.mu.Unlock()
				return
			}
			w.kinds[ev.GetKind()]++
			if !w.discard {
				w.events = append(w.events, ev)
			}
			w.mu.Unlock()
		}
	}()
	t.Cleanup(w.close)
	return w, resume
}

func (w *watcher) close() {
	w.cancel()
	<-w.done
}

func (w *watcher) snapshot() ([]*mcpdv1.SubscriptionEvent, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]*mcpdv1.SubscriptionEvent(nil), w.events...), w.err
}

// count counts received events matching f.
func (w *watcher) count(f func(*mcpdv1.SubscriptionEvent) bool) int {
	evs, _ := w.snapshot()
	n := 0
	for _, ev := range evs {
		if f(ev) {
			n++
		}
	}
	return n
}

// kindCount counts received events of kind k (also for discarding watchers).
func (w *watcher) kindCount(k mcpdv1.SubscriptionEventKind) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.kinds[k]
}

func kindIs(k mcpdv1.SubscriptionEventKind) func(*mcpdv1.SubscriptionEvent) bool {
	return func(ev *mcpdv1.SubscriptionEvent) bool { return ev.GetKind() == k }
}

// realUpdate matches a non-synthetic resource update of uri.
func realUpdate(uri string) func(*mcpdv1.SubscriptionEvent) bool {
	return func(ev *mcpdv1.SubscriptionEvent) bool {
		return ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_RESOURCE_UPDATED &&
			!ev.GetSynthetic() && ev.GetUri() == uri
	}
}
