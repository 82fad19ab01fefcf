package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// waitTimeout bounds every poll; a safety net against hangs, never an
// expectation about speed.
const waitTimeout = 60 * time.Second

// fakeSpec is a server running fakemcp in mode.
func fakeSpec(name, mode string) supervisor.Spec {
	cmd, args := fakemcp.Command()
	return supervisor.Spec{Name: name, Command: cmd, Args: args, Autostart: true,
		Env: map[string]string{fakemcp.EnvMode: mode, "GORACE": "atexit_sleep_ms=0"}}
}

// runSupervisor runs a supervisor for the test; cleanup stops it and checks
// that its children were reaped.
func runSupervisor(t *testing.T, specs ...supervisor.Spec) *supervisor.Supervisor {
	t.Helper()
	sup := supervisor.New(supervisor.Options{Specs: specs, Logger: zaptest.NewLogger(t), BackoffMin: time.Millisecond, BackoffMax: 10 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("supervisor Run: %v", err)
		}
	})
	return sup
}

// value returns the value of the sample of family name whose labels include
// want (a counter, a gauge, or a histogram's sample count).
func value(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if got[k] != v {
					continue metric
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

func mustValue(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	v, ok := value(t, reg, name, labels)
	if !ok {
		t.Fatalf("no sample %s%v", name, labels)
	}
	return v
}

func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond) // polling interval, not a correctness wait
	}
}

func callTool(t *testing.T, sup *supervisor.Supervisor, server, tool string, args any) *session.Response {
	t.Helper()
	params, _ := json.Marshal(map[string]any{"name": tool, "arguments": args})
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	resp, _, err := sup.CallCached(ctx, server, &session.Request{Method: "tools/call", Params: params}, supervisor.CallOptions{})
	if err != nil {
		t.Fatalf("call %s on %s: %v", tool, server, err)
	}
	return resp
}

// TestCollectorReadsSupervisor scrapes a real supervisor with a fakemcp
// child: calls and failed calls are counted, the state is reported, cache
// counters move, and a SIGKILLed child shows up as a restart.
func TestCollectorReadsSupervisor(t *testing.T) {
	sup := runSupervisor(t, fakeSpec("a", "dual"), fakeSpec("b", "legacy"))
	m := New(sup, zaptest.NewLogger(t))
	reg := m.Registry()
	a := map[string]string{"server": "a"}

	for i := range 3 {
		if resp := callTool(t, sup, "a", "echo", map[string]any{"message": fmt.Sprint(i)}); resp.Error != nil {
			t.Fatalf("echo: %v", resp.Error)
		}
	}
	if resp := callTool(t, sup, "a", "nosuchtool", map[string]any{}); resp.Error == nil {
		t.Fatal("unknown tool: want a JSON-RPC error")
	}
	if got := mustValue(t, reg, "mcpd_calls_total", a); got != 4 {
		t.Errorf("mcpd_calls_total{server=a} = %v, want 4", got)
	}
	if got := mustValue(t, reg, "mcpd_calls_failed_total", a); got != 1 {
		t.Errorf("mcpd_calls_failed_total{server=a} = %v, want 1", got)
	}
	if got := mustValue(t, reg, "mcpd_calls_in_flight", a); got != 0 {
		t.Errorf("mcpd_calls_in_flight{server=a} = %v, want 0", got)
	}
	if got := mustValue(t, reg, "mcpd_server_state", map[string]string{"server": "a", "state": "ready"}); got != 1 {
		t.Errorf("mcpd_server_state{server=a,state=ready} = %v, want 1", got)
	}
	if got := mustValue(t, reg, "mcpd_server_state", map[string]string{"server": "a", "state": "backoff"}); got != 0 {
		t.Errorf("mcpd_server_state{server=a,state=backoff} = %v, want 0", got)
	}
	// A list twice: the second is served from the modern child's ttlMs.
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		if _, _, err := sup.ListCached(ctx, "a", "tools/list", nil, supervisor.CallOptions{}); err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		cancel()
	}
	if hits, misses := mustValue(t, reg, "mcpd_cache_hits_total", a), mustValue(t, reg, "mcpd_cache_misses_total", a); hits != 1 || misses != 1 {
		t.Errorf("cache hits, misses = %v, %v; want 1, 1", hits, misses)
	}
	if got := mustValue(t, reg, "mcpd_cache_entries", a); got < 1 {
		t.Errorf("mcpd_cache_entries{server=a} = %v, want at least 1", got)
	}
	if got := mustValue(t, reg, "mcpd_calls_total", map[string]string{"server": "b"}); got != 0 {
		t.Errorf("mcpd_calls_total{server=b} = %v, want 0", got)
	}

	// SIGKILL the child: the autostart server comes back, one restart.
	st, err := sup.ServerStatus("a")
	if err != nil || st.Pid == 0 {
		t.Fatalf("status of a: %+v, %v", st, err)
	}
	if got := mustValue(t, reg, "mcpd_server_restarts_total", a); got != 0 {
		t.Fatalf("mcpd_server_restarts_total{server=a} = %v before the kill, want 0", got)
	}
	if err := syscall.Kill(st.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	oldPid := st.Pid
	poll(t, "a restarted", func() bool {
		st, _ := sup.ServerStatus("a")
		return st.State == supervisor.StateReady && st.Pid != 0 && st.Pid != oldPid
	})
	if got := mustValue(t, reg, "mcpd_server_restarts_total", a); got != 1 {
		t.Errorf("mcpd_server_restarts_total{server=a} = %v after a SIGKILL, want 1", got)
	}
	if got := mustValue(t, reg, "mcpd_calls_total", a); got != 5 { // the cache miss was one call
		t.Errorf("mcpd_calls_total{server=a} = %v after the restart, want 5", got)
	}
	// The exposition is valid (promlint-clean names, help on everything).
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("lint: %v %+v", err, problems)
	}
}

// TestMessagesInvalid checks that a child's invalid messages are counted per
// server.
func TestMessagesInvalid(t *testing.T) {
	sup := runSupervisor(t, fakeSpec("a", "dual"), fakeSpec("b", "dual"))
	reg := New(sup, zaptest.NewLogger(t)).Registry()
	for range 2 {
		if resp := callTool(t, sup, "a", "invalid", map[string]any{}); resp.Error != nil {
			t.Fatalf("invalid: %v", resp.Error)
		}
	}
	if got := mustValue(t, reg, "mcpd_messages_invalid_total", map[string]string{"server": "a"}); got != 2 {
		t.Errorf("mcpd_messages_invalid_total{server=a} = %v, want 2", got)
	}
	if got := mustValue(t, reg, "mcpd_messages_invalid_total", map[string]string{"server": "b"}); got != 0 {
		t.Errorf("mcpd_messages_invalid_total{server=b} = %v, want 0", got)
	}
}

// TestFanoutTotals checks the subscription counters, including that a
// closed stream's counts stay in the totals.
func TestFanoutTotals(t *testing.T) {
	sup := runSupervisor(t, fakeSpec("a", "legacy"))
	m := New(sup, zaptest.NewLogger(t))
	reg := m.Registry()

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, _, err := sup.Subscriptions().Subscribe(ctx, subscriptions.AppInfo{Name: "test"},
		subscriptions.Watch{Servers: []string{"a"}, ToolsListChanged: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if got := mustValue(t, reg, "mcpd_subscription_streams", nil); got != 1 {
		t.Errorf("mcpd_subscription_streams = %v, want 1", got)
	}
	callTool(t, sup, "a", "changed", map[string]any{"kind": "tools"})
	var got []*subscriptions.Event
	for !slices.ContainsFunc(got, func(ev *subscriptions.Event) bool { return ev.Kind == subscriptions.KindToolsListChanged }) {
		select {
		case <-st.Ready():
		case <-ctx.Done():
			t.Fatalf("no tools_list_changed event; got %+v", got)
		}
		evs, _ := st.Take(nil)
		got = append(got, evs...)
	}
	st.Close()
	if got := mustValue(t, reg, "mcpd_subscription_streams", nil); got != 0 {
		t.Errorf("mcpd_subscription_streams after close = %v, want 0", got)
	}
	if got := mustValue(t, reg, "mcpd_subscription_streams_opened_total", nil); got != 1 {
		t.Errorf("mcpd_subscription_streams_opened_total = %v, want 1", got)
	}
	if d := mustValue(t, reg, "mcpd_subscription_events_delivered_total", nil); d != float64(len(got)) {
		t.Errorf("mcpd_subscription_events_delivered_total = %v after close, want %d", d, len(got))
	}
}

// fakeSource is a Source whose server list a test changes.
type fakeSource struct {
	mu    sync.Mutex
	names []string
}

func (f *fakeSource) Status() []supervisor.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]supervisor.Status, 0, len(f.names))
	for _, n := range f.names {
		out = append(out, supervisor.Status{Name: n, State: supervisor.StateStopped})
	}
	return out
}

func (f *fakeSource) Subscriptions() *subscriptions.Manager { return nil }

func (f *fakeSource) set(names ...string) {
	f.mu.Lock()
	f.names = names
	f.mu.Unlock()
}

// TestLatencyHistogram checks the labels of ObserveCall (unknown methods
// folded into "other"), that a server removed from the config leaves the
// exposition, and that an observation allocates nothing.
func TestLatencyHistogram(t *testing.T) {
	src := &fakeSource{}
	src.set("a", "b")
	m := New(src, nil)
	reg := m.Registry()
	m.ObserveCall("a", "tools/call", 3*time.Millisecond)
	m.ObserveCall("a", "tools/call", 2*time.Second)
	m.ObserveCall("a", "x-vendor/thing", time.Millisecond)
	m.ObserveCall("a", "y-vendor/other", time.Millisecond)
	m.ObserveCall("b", "resources/read", time.Millisecond)

	const name = "mcpd_request_duration_seconds"
	for _, c := range []struct {
		server, method string
		want           float64
	}{{"a", "tools/call", 2}, {"a", "other", 2}, {"b", "resources/read", 1}} {
		if got := mustValue(t, reg, name, map[string]string{"server": c.server, "method": c.method}); got != c.want {
			t.Errorf("%s{server=%s,method=%s} count = %v, want %v", name, c.server, c.method, got, c.want)
		}
	}
	if _, ok := value(t, reg, name, map[string]string{"method": "x-vendor/thing"}); ok {
		t.Error("an unknown method got its own label value")
	}
	var series []string
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, mm := range mf.GetMetric() {
				var l []string
				for _, lp := range mm.GetLabel() {
					l = append(l, lp.GetValue())
				}
				series = append(series, strings.Join(l, ","))
				if h := mm.GetHistogram(); h.GetSampleCount() > 0 && len(h.GetBucket()) != len(LatencyBuckets) {
					t.Errorf("%d buckets, want %d", len(h.GetBucket()), len(LatencyBuckets))
				}
			}
		}
	}
	sort.Strings(series)
	if want := []string{"other,a", "tools/call,a", "resources/read,b"}; !slices.Equal(sortedCopy(want), series) {
		t.Errorf("series = %v, want %v", series, sortedCopy(want))
	}

	// A reload removed b: its series go at the next scrape.
	src.set("a")
	if _, ok := value(t, reg, name, map[string]string{"server": "b"}); ok {
		t.Error("series of removed server b still exported")
	}
	if _, ok := value(t, reg, name, map[string]string{"server": "a", "method": "tools/call"}); !ok {
		t.Error("series of server a lost by the prune")
	}
	// b comes back: it is observed afresh.
	src.set("a", "b")
	m.ObserveCall("b", "resources/read", time.Millisecond)
	if got := mustValue(t, reg, name, map[string]string{"server": "b", "method": "resources/read"}); got != 1 {
		t.Errorf("count of re-added b = %v, want 1", got)
	}

	if allocs := testing.AllocsPerRun(1000, func() { m.ObserveCall("a", "tools/call", time.Millisecond) }); allocs != 0 {
		t.Errorf("ObserveCall allocates %v times per call, want 0", allocs)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return out
}

// TestConcurrentObserveAndScrape runs observations of new servers and
// methods against scrapes that prune, for the race detector.
func TestConcurrentObserveAndScrape(t *testing.T) {
	src := &fakeSource{}
	src.set("s0", "s1", "s2", "s3")
	m := New(src, nil)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 200 {
				m.ObserveCall(fmt.Sprintf("s%d", (g+i)%5), methods[i%len(methods)], time.Duration(i)*time.Microsecond)
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			if _, err := m.Registry().Gather(); err != nil {
				t.Errorf("gather: %v", err)
				return
			}
		}
	})
	wg.Wait()
	m.Registry().Gather() // prunes s4
	if _, ok := value(t, m.Registry(), "mcpd_request_duration_seconds", map[string]string{"server": "s4"}); ok {
		t.Error("series of unconfigured server s4 exported")
	}
	if got := mustValue(t, m.Registry(), "mcpd_request_duration_seconds", map[string]string{"server": "s0", "method": methods[0]}); got == 0 {
		t.Error("no observation of s0 survived")
	}
}

// BenchmarkObserveCall is the cost the API layer pays per request when
// metrics are on.
func BenchmarkObserveCall(b *testing.B) {
	src := &fakeSource{}
	src.set("a")
	m := New(src, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			m.ObserveCall("a", "tools/call", time.Millisecond)
		}
	})
}

// TestCollectorNamesInstances scrapes a server shared per app: each app's
// instance has its own call counter and state, the server's series sum
// them, and mcpd_server_instances counts them.
func TestCollectorNamesInstances(t *testing.T) {
	spec := fakeSpec("per", "legacy")
	spec.Share = supervisor.ShareClient
	sup := runSupervisor(t, spec)
	reg := New(sup, zaptest.NewLogger(t)).Registry()
	call := func(app string, n int) {
		ctx := supervisor.WithScope(context.Background(), supervisor.Scope{App: app})
		params, _ := json.Marshal(map[string]any{"name": "echo", "arguments": map[string]any{"message": "m"}})
		for range n {
			if _, _, err := sup.CallCached(ctx, "per", &session.Request{Method: "tools/call", Params: params}, supervisor.CallOptions{}); err != nil {
				t.Fatalf("call for %s: %v", app, err)
			}
		}
	}
	call("app-a", 2)
	call("app-b", 3)
	if got := mustValue(t, reg, "mcpd_server_instances", map[string]string{"server": "per"}); got != 2 {
		t.Errorf("mcpd_server_instances = %v, want 2", got)
	}
	for app, want := range map[string]float64{"app-a": 2, "app-b": 3} {
		l := map[string]string{"server": "per", "instance": app}
		if got := mustValue(t, reg, "mcpd_instance_calls_total", l); got != want {
			t.Errorf("mcpd_instance_calls_total%v = %v, want %v", l, got, want)
		}
		l["state"] = "ready"
		if got := mustValue(t, reg, "mcpd_instance_state", l); got != 1 {
			t.Errorf("mcpd_instance_state%v = %v, want 1", l, got)
		}
	}
	if got := mustValue(t, reg, "mcpd_calls_total", map[string]string{"server": "per"}); got != 5 {
		t.Errorf("mcpd_calls_total{server=per} = %v, want 5 (the instances' sum)", got)
	}
	if probs, err := testutil.GatherAndLint(reg, "mcpd_instance_calls_total", "mcpd_server_instances"); err != nil || len(probs) > 0 {
		t.Errorf("lint: %v %v", probs, err)
	}
}

// Reference names every family the collector describes, and build_info.
func TestReferenceComplete(t *testing.T) {
	fams, err := Reference()
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *prometheus.Desc, 100)
	(&statusCollector{m: New(&fakeSource{}, nil)}).Describe(ch)
	close(ch)
	if want := len(ch) + 1; len(fams) != want {
		t.Errorf("Reference has %d families, want %d (every description and build_info)", len(fams), want)
	}
	for _, f := range fams {
		if f.Help == "" || f.Type == "" {
			t.Errorf("%s lacks its help or type", f.Name)
		}
	}
}
