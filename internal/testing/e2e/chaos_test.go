package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// chaosApps is how many apps (gRPC connections) call the chaos children;
// chaosWatchers of them also watch every server.
const chaosApps, chaosWatchers = 24, 3

// TestChaos runs many apps against a real mcpd whose children misbehave in
// every way it must survive (chaos_children_test.go), and whose remote
// server goes down and comes back several times (chaos_remote_test.go),
// and checks that every call ends by its deadline + 1s with a result or a
// clear error, that a call succeeds soon after each return of the remote
// server, that no
// answer reaches an app other than the one that asked (each call carries a
// token its answer must echo), and that once the servers are stopped mcpd's
// goroutines and file descriptors are back where they were before the
// chaos, and its memory within a generous bound.
func TestChaos(t *testing.T) {
	skipShort(t)
	children := chaosChildren()
	remote := startChaosRemote(t)
	children["remote"] = remote.child()
	names := sortedNames(children)
	dir := tempdir.Short(t)
	msock := filepath.Join(dir, "run", "metrics.sock")
	log := &chaosLog{outcomes: map[string]int{}}
	// Registered before the daemon, so it runs after the daemon's cleanup
	// has dumped mcpd's output: a failure's reason is the last thing said.
	t.Cleanup(func() { log.summary(t) })
	// At info level: at debug mcpd logs every stderr line of the noisy
	// children (some 100 MB in a minute), and a test process that reads
	// that pipe slower than mcpd writes it stalls mcpd's every goroutine
	// that logs, which is the test measuring itself.
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), writeChaosConfig(t, dir, children),
		"--metrics-listen", "unix:"+msock, "--log-level", "info")
	d.waitServing()
	ctl := d.client()

	// The baseline is taken once every server has run, answered and been
	// watched, and was stopped again: what mcpd keeps per server for its
	// whole life is in it.
	for _, n := range names {
		resp, _, err := callTool(ctxT(t), ctl, &mcpdv1.CallToolRequest{Server: n, Tool: "echo", ArgumentsJson: echoArgs("warm-up")})
		if err != nil || text(t, resp) != "warm-up" {
			t.Fatalf("warm-up call to %s: %v %v", n, resp, err)
		}
	}
	wctx, wcancel := context.WithCancel(ctxT(t))
	if s, err := ctl.Subscribe(wctx, chaosWatchAll); err != nil {
		t.Fatal(err)
	} else if _, err := s.Recv(); err != nil {
		t.Fatalf("warm-up watch: %v", err)
	}
	wcancel()
	stopAll(t, d, ctl, names)
	base := settledUsage(t, d, msock)
	for _, n := range names {
		if _, err := ctl.StartServer(ctxT(t), &mcpdv1.StartServerRequest{Name: n}); err != nil {
			t.Fatalf("start %s: %v", n, err)
		}
	}

	remote.start()
	runChaos(t, d, children, log, func() { remote.tick(ctl, log) })
	remote.finish(log) // after runChaos: the lag probe has stopped
	stopAll(t, d, ctl, names)

	log.mu.Lock()
	log.lateProblems()
	t.Logf("the test's own scheduling lag peaked at %v; %d calls ended over 1s past their deadline", log.lag.Round(time.Millisecond), len(log.late))
	keys := slices.Sorted(maps.Keys(log.outcomes))
	for _, k := range keys {
		t.Logf("%6d  %s", log.outcomes[k], k)
	}
	for _, p := range log.problems[:min(len(log.problems), 30)] {
		t.Error(p)
	}
	if len(log.problems) > 30 {
		t.Errorf("... and %d more problems", len(log.problems)-30)
	}
	log.mu.Unlock()

	d.mu.Lock()
	for pid := range d.children {
		if alive(pid) {
			t.Errorf("child %d alive after every server was stopped", pid)
		}
	}
	d.mu.Unlock()
	checkUsage(t, d, msock, base)
}

// runChaos runs the apps and watchers for chaosDuration and waits for them,
// their connections closed.
// tick runs on the test's goroutine every sampling interval.
func runChaos(t *testing.T, d *daemon, children map[string]chaosChild, log *chaosLog, tick func()) {
	names := sortedNames(children)
	end := time.Now().Add(*chaosDuration)
	wctx, stopWatchers := context.WithCancel(context.Background())
	var apps, watchers sync.WaitGroup
	for i := range chaosApps {
		conn := d.dial()
		a := &chaosApp{id: i, c: mcpdv1.NewMcpdClient(conn), rng: rand.New(rand.NewPCG(uint64(i), 99)), log: log}
		if i < chaosWatchers {
			req := chaosWatchAll
			if i == 0 {
				req = chaosWatchStorm
			}
			watchers.Go(func() { a.watch(wctx, req) })
		}
		apps.Go(func() {
			for n := 0; time.Now().Before(end); n++ {
				server := names[a.rng.IntN(len(names))]
				if server == "stubborn" && a.rng.IntN(50) == 0 {
					a.restart(server)
					continue
				}
				calls := children[server].calls
				a.call(server, calls[a.rng.IntN(len(calls))], n)
			}
		})
		defer conn.Close()
	}
	var probe sync.WaitGroup
	probe.Go(func() { log.probeLag(wctx) })
	defer func() { stopWatchers(); probe.Wait() }() // also when the test fails early
	ctl := d.client()
	for time.Now().Before(end) {
		d.status(ctl) // records every child's pid for the checks after the stop
		tick()
		time.Sleep(200 * time.Millisecond) // sampling interval, not a correctness wait
	}
	apps.Wait()
	stopWatchers()
	watchers.Wait()
}

// chaosLog collects what the apps saw.
type chaosLog struct {
	mu       sync.Mutex // guards the fields below
	outcomes map[string]int
	problems []string
	late     []lateCall    // calls that ended more than 1s after their deadline
	lag      time.Duration // the most a short sleep of the test overslept
}

// lateCall is a call that ended more than 1s past its deadline.
type lateCall struct {
	what          string
	took, timeout time.Duration
}

// chaosMaxLagAllowance caps how much of the machine's own scheduling lag
// (measured by the test as it runs) is added to a call's 1s of slack: on
// two loaded cores under the race detector the whole machine can stall
// for a second, but not for the many seconds a real defect costs.
const chaosMaxLagAllowance = 2 * time.Second

// lateProblems reports the late calls beyond their slack: 1s, plus the
// lag the test itself saw, up to chaosMaxLagAllowance.
func (l *chaosLog) lateProblems() {
	slack := time.Second + min(l.lag, chaosMaxLagAllowance)
	for _, c := range l.late {
		if c.took > c.timeout+slack {
			l.problems = append(l.problems, fmt.Sprintf("%s: ended after %v, deadline %v (slack %v)",
				c.what, c.took.Round(time.Millisecond), c.timeout, slack.Round(time.Millisecond)))
		}
	}
}

// probeLag records in l.lag, until ctx ends, the most a 20ms sleep overslept.
func (l *chaosLog) probeLag(ctx context.Context) {
	const nap = 20 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		time.Sleep(nap) // the probe itself: how late the scheduler wakes us
		over := time.Since(start) - nap
		l.mu.Lock()
		l.lag = max(l.lag, over)
		l.mu.Unlock()
	}
}

// summary repeats, when t failed, how many problems the apps saw and the
// first of them.
func (l *chaosLog) summary(t *testing.T) {
	if !t.Failed() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t.Logf("TestChaos failed with %d problems (listed above mcpd's output); the first: %s",
		len(l.problems), strings.Join(l.problems[:min(len(l.problems), 3)], "; "))
}

func (l *chaosLog) add(outcome string) {
	l.mu.Lock()
	l.outcomes[outcome]++
	l.mu.Unlock()
}

func (l *chaosLog) problem(format string, args ...any) {
	l.mu.Lock()
	l.problems = append(l.problems, fmt.Sprintf(format, args...))
	l.mu.Unlock()
}

// chaosApp is one app of TestChaos, on its own connection.
type chaosApp struct {
	id  int
	c   mcpdv1.McpdClient
	rng *rand.Rand
	log *chaosLog
}

// call makes one call with a server-side deadline and checks how it ended.
func (a *chaosApp) call(server string, cc chaosCall, n int) {
	token := fmt.Sprintf("app%d-call%d", a.id, n)
	args := map[string]any{"message": token}
	maps.Copy(args, cc.args)
	b, _ := json.Marshal(args)
	timeout := time.Duration(300+a.rng.IntN(1700)) * time.Millisecond
	// The app's own deadline is only a safety net: mcpd must end the call.
	ctx, cancel := context.WithTimeout(context.Background(), timeout+30*time.Second)
	defer cancel()
	start := time.Now()
	resp, _, err := callTool(ctx, a.c, &mcpdv1.CallToolRequest{Server: server, Tool: cc.tool, ArgumentsJson: string(b),
		Options: &mcpdv1.CallOptions{TimeoutMs: timeout.Milliseconds()}})
	took := time.Since(start)
	what := server + "/" + cc.tool
	if took > timeout+time.Second {
		a.log.mu.Lock()
		a.log.late = append(a.log.late, lateCall{fmt.Sprintf("%s (%s, %v)", what, token, err), took, timeout})
		a.log.mu.Unlock()
	}
	switch {
	case err != nil:
		st := status.Convert(err)
		if st.Code() == codes.Unknown || st.Code() == codes.Internal || st.Message() == "" {
			a.log.problem("%s (%s): unclear error %v", what, token, err)
		}
		a.log.add(what + ": " + st.Code().String())
	case resp.GetError() != nil:
		if resp.GetError().GetMessage() == "" {
			a.log.problem("%s (%s): MCP error without a message: %v", what, token, resp.GetError())
		}
		a.log.add(what + ": MCP error")
	default:
		got, ok := resultText(resp.GetResultJson())
		switch {
		case !ok:
			a.log.problem("%s (%s): malformed result %.200s", what, token, resp.GetResultJson())
		case got != token && strings.Contains(got, "-call"):
			a.log.problem("%s (%s): got the answer of another call: %q", what, token, got)
		case cc.echo && got != token:
			a.log.problem("%s (%s): result %.100q, want the token", what, token, got)
		}
		a.log.add(what + ": ok")
	}
}

// restart restarts server (which may ignore SIGTERM) while others call it.
func (a *chaosApp) restart(server string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	_, err := a.c.RestartServer(ctx, &mcpdv1.RestartServerRequest{Name: server})
	if st := status.Convert(err); err != nil && (st.Code() == codes.Unknown || st.Message() == "") {
		a.log.problem("restart %s: unclear error %v", server, err)
	}
	a.log.add("restart " + server + ": " + status.Code(err).String())
}

// resultText returns the text of a result's single text content.
func resultText(result string) (string, bool) {
	var r struct {
		Content []struct{ Type, Text string } `json:"content"`
	}
	if json.Unmarshal([]byte(result), &r) != nil || len(r.Content) != 1 || r.Content[0].Type != "text" {
		return "", false
	}
	return r.Content[0].Text, true
}

var (
	chaosWatchAll = &mcpdv1.SubscribeRequest{ToolsListChanged: true, ResourcesListChanged: true, ServerState: true, LogMessages: true}
	// chaosWatchStorm also watches the resources the storm updates.
	chaosWatchStorm = &mcpdv1.SubscribeRequest{Servers: []string{"storm"}, LogMessages: true, ToolsListChanged: true,
		ResourceUris: []string{"fake://r/0", "fake://r/1", "fake://r/2", "fake://r/3", "fake://r/4"}}
)

// watch reads a stream of req until ctx ends, subscribing again whenever
// mcpd ends it (lagged, or a server it needs crash-looping).
func (a *chaosApp) watch(ctx context.Context, req *mcpdv1.SubscribeRequest) {
	for ctx.Err() == nil {
		s, err := a.c.Subscribe(ctx, req)
		for err == nil {
			var ev *mcpdv1.SubscriptionEvent
			if ev, err = s.Recv(); err == nil {
				if ev.GetKind() == mcpdv1.SubscriptionEventKind_SUBSCRIPTION_EVENT_KIND_LOGS_LAGGED && ev.GetDroppedLogMessages() == 0 {
					a.log.problem("watch: logs-lagged event without a count: %v", ev)
				}
				a.log.add("watch: " + ev.GetKind().String())
			}
		}
		if ctx.Err() != nil {
			return
		}
		if st := status.Convert(err); st.Code() == codes.Unknown || st.Code() == codes.Internal {
			a.log.problem("watch: stream ended with %v", err)
		}
		a.log.add("watch ended: " + status.Code(err).String())
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond): // pacing before subscribing again
		}
	}
}

// stopAll stops every server and waits until each is stopped.
func stopAll(t *testing.T, d *daemon, ctl mcpdv1.McpdClient, names []string) {
	t.Helper()
	for _, n := range names {
		if _, err := ctl.StopServer(ctxT(t), &mcpdv1.StopServerRequest{Name: n}); err != nil {
			t.Fatalf("stop %s: %v", n, err)
		}
	}
	poll(t, "every server stopped", func() (bool, error) {
		for _, s := range d.status(ctl).GetServers() {
			if s.GetState() != mcpdv1.ServerState_SERVER_STATE_STOPPED || s.GetPid() != 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

// usage is what mcpd holds: goroutines, open fds, resident memory.
type usage struct {
	goroutines, fds int
	rssKiB          int64
}

func measureUsage(t *testing.T, d *daemon, metricsSock string) usage {
	t.Helper()
	pid := strconv.Itoa(d.cmd.Process.Pid)
	fds, err := os.ReadDir("/proc/" + pid + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	u := usage{goroutines: int(scrapeUnix(t, metricsSock)["go_goroutines"]), fds: len(fds)}
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			u.rssKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return u
}

// settledUsage measures until goroutines and fds stay put over three
// samples (the stopped children's goroutines winding down).
func settledUsage(t *testing.T, d *daemon, metricsSock string) usage {
	t.Helper()
	var last []usage
	poll(t, "mcpd's usage to settle", func() (bool, error) {
		last = append(last, measureUsage(t, d, metricsSock))
		n := len(last)
		return n >= 3 && last[n-1].goroutines == last[n-3].goroutines && last[n-2].goroutines == last[n-3].goroutines &&
			last[n-1].fds == last[n-3].fds, nil
	})
	u := last[len(last)-1]
	t.Logf("baseline: %d goroutines, %d fds, RSS %d MiB", u.goroutines, u.fds, u.rssKiB>>10)
	return u
}

// Bounds of what mcpd may hold after the chaos beyond the baseline.
const (
	chaosGoroutineSlack = 5
	chaosFDSlack        = 3
	chaosRSSSlackKiB    = 256 << 10 // the Go heap returns memory to the system lazily
)

// checkUsage waits until goroutines and fds are back near base, then
// checks memory.
func checkUsage(t *testing.T, d *daemon, metricsSock string, base usage) {
	t.Helper()
	var u usage
	deadline := time.Now().Add(30 * time.Second)
	for {
		u = measureUsage(t, d, metricsSock)
		if u.goroutines <= base.goroutines+chaosGoroutineSlack && u.fds <= base.fds+chaosFDSlack || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
	t.Logf("after the chaos: %d goroutines, %d fds, RSS %d MiB", u.goroutines, u.fds, u.rssKiB>>10)
	if u.goroutines > base.goroutines+chaosGoroutineSlack {
		t.Errorf("%d goroutines after the servers stopped, baseline %d (mcpd's goroutines are dumped in its output)", u.goroutines, base.goroutines)
		dumpGoroutines(t, d)
	}
	if u.fds > base.fds+chaosFDSlack {
		t.Errorf("%d open fds after the servers stopped, baseline %d", u.fds, base.fds)
	}
	if u.rssKiB > 2*base.rssKiB+chaosRSSSlackKiB {
		t.Errorf("RSS %d MiB after the servers stopped, baseline %d MiB", u.rssKiB>>10, base.rssKiB>>10)
	}
}

// dumpGoroutines has mcpd write every goroutine's stack into its output
// (the Go runtime's answer to SIGQUIT), and waits for it to exit.
func dumpGoroutines(t *testing.T, d *daemon) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Logf("SIGQUIT mcpd: %v", err)
		return
	}
	_ = d.wait()
}
