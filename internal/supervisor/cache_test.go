package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/cache"
	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// upstream returns how many requests of method the fake server has received
// (its stats tool; tools/call is never cached, so this asks the child).
func (h *harness) upstream(server, method string) int {
	h.t.Helper()
	resp, err := h.s.Call(context.Background(), server, toolCall("stats", nil), CallOptions{})
	if err != nil {
		h.t.Fatalf("stats on %q: %v", server, err)
	}
	var st fakemcp.Stats
	if err := json.Unmarshal([]byte(text(h.t, resp)), &st); err != nil {
		h.t.Fatalf("stats: %v", err)
	}
	return st.Methods[method]
}

func (h *harness) list(server, method string) (string, cache.Source) {
	h.t.Helper()
	items, src, err := h.s.ListCached(context.Background(), server, method, nil, CallOptions{})
	if err != nil {
		h.t.Fatalf("list %s on %q: %v", method, server, err)
	}
	return string(items), src
}

func (h *harness) wantList(server, method string, want cache.Source) string {
	h.t.Helper()
	items, src := h.list(server, method)
	if src != want {
		h.t.Fatalf("%s on %q came %v, want %v", method, server, src, want)
	}
	return items
}

func withCache(spec Spec, policy string) Spec {
	spec.Cache = policy
	return spec
}

func withTTL(spec Spec, ms string) Spec {
	spec.Env[fakemcp.EnvTTL] = ms
	return spec
}

// Fifty apps asking a cold cache at once: the child sees one tools/list.
// (The ttlMs tests turn mcpd's own listen off: its promise would keep the
// modern fake's lists regardless of ttlMs; ownlisten.go.)
func TestCacheColdListsShareOneUpstream(t *testing.T) {
	for _, mode := range []string{"legacy", "modern"} {
		t.Run(mode, func(t *testing.T) {
			// The modern fake answers ttlMs 0 and no listen is open, so
			// nothing is stored: only coalescing can keep the count at one,
			// hence the slow answers ("ms") of a blocked first request.
			spec := fakeSpec("f", mode)
			h := newHarness(t, Options{NoCacheListens: true, Specs: []Spec{withTTL(spec, "0")}}, nil)
			h.mustEcho("f", "warm")
			const n = 50
			var wg sync.WaitGroup
			sources := make([]cache.Source, n)
			results := make([]string, n)
			for i := range n {
				wg.Go(func() {
					req := &session.Request{
						Method:     "tools/list",
						ClientInfo: json.RawMessage(`{"name":"app","version":"` + string(rune('a'+i%26)) + `"}`),
					}
					items, src, err := h.s.ListCached(context.Background(), "f", "tools/list", req, CallOptions{})
					if err != nil {
						t.Errorf("list: %v", err)
					}
					sources[i], results[i] = src, string(items)
				})
			}
			wg.Wait()
			got := h.upstream("f", "tools/list")
			count := map[cache.Source]int{}
			for i, s := range sources {
				count[s]++
				if results[i] != results[0] {
					t.Fatalf("result %d differs", i)
				}
			}
			if mode == "legacy" && got != 1 {
				t.Fatalf("child saw %d tools/list, want 1 (sources %v)", got, count)
			}
			// Whatever the timing, every fetch the child saw is a caller
			// that was told "fetched".
			if count[cache.SourceFetched] != got {
				t.Fatalf("child saw %d tools/list, %d callers were told fetched (%v)", got, count[cache.SourceFetched], count)
			}
			st := h.status("f").Cache
			if st.Misses != int64(got) || st.Hits+st.Coalesced != int64(n-got) {
				t.Fatalf("stats %+v for %d upstream", st, got)
			}
		})
	}
}

// A deterministic single flight on a modern server that promises nothing:
// the first request is held by the child until all 50 joined.
func TestCacheCoalescesWhileInFlight(t *testing.T) {
	h := newHarness(t, Options{NoCacheListens: true, Specs: []Spec{withTTL(fakeSpec("f", "modern"), "0")}}, nil)
	h.mustEcho("f", "warm")
	sv, _ := h.s.lookup("f")
	// resources/read of fake://hello with the fake's slow echo is not
	// possible, so hold the flight in the cache itself: a first caller whose
	// fetch waits until 49 others joined.
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseFirst := func() { releaseOnce.Do(func() { close(release) }) }
	// On a failed wait the held fetch must still end, or stopping the
	// supervisor in the cleanup would wait for it for ever.
	defer releaseFirst()
	key, _ := cache.ListKey("tools/list", nil)
	key = key.Scoped(jsonrpc.CapsDigest(nil)) // a modern child: keyed by the declaration (none)
	first := make(chan cache.Source, 1)
	go func() {
		_, src, _ := sv.cache.Do(context.Background(), key, func(ctx context.Context) (cache.Result, error) {
			<-release
			var hh listHints
			items, err := h.s.fetchList(ctx, "f", "tools/list", nil, CallOptions{}, &hh)
			return cache.Result{Body: items, TTL: hh.ttl, NoStore: !hh.storable}, err
		})
		first <- src
	}()
	waitFor(t, "the first flight", func() bool { return sv.cache.Stats().Misses == 1 })
	var wg sync.WaitGroup
	for range 49 {
		wg.Go(func() {
			if _, src := h.list("f", "tools/list"); src != cache.SourceCoalesced {
				t.Errorf("source %v, want coalesced", src)
			}
		})
	}
	waitFor(t, "49 coalesced", func() bool { return sv.cache.Stats().Coalesced == 49 })
	releaseFirst()
	wg.Wait()
	if src := <-first; src != cache.SourceFetched {
		t.Fatalf("first source %v", src)
	}
	if got := h.upstream("f", "tools/list"); got != 1 {
		t.Fatalf("child saw %d tools/list, want 1", got)
	}
	// ttlMs 0 and no promise: the next request is not served stale.
	h.wantList("f", "tools/list", cache.SourceFetched)
	if got := h.upstream("f", "tools/list"); got != 2 {
		t.Fatalf("child saw %d tools/list, want 2", got)
	}
}

// A caller's own timeout ends only its own wait: an app that joined the
// same upstream request still gets the list, and the child is asked once.
func TestCacheCallerTimeoutDoesNotEndSharedFetch(t *testing.T) {
	spec := fakeSpec("f", "legacy")
	spec.Env[fakemcp.EnvListDelay] = "600"
	h := newHarness(t, Options{NoCacheListens: true, Specs: []Spec{spec}}, nil)
	h.mustEcho("f", "warm")
	sv, _ := h.s.lookup("f")

	first := make(chan error, 1)
	go func() {
		_, _, err := h.s.ListCached(context.Background(), "f", "tools/list", nil, CallOptions{Timeout: 100 * time.Millisecond})
		first <- err
	}()
	waitFor(t, "the first flight", func() bool { return sv.cache.Stats().Misses == 1 })
	type answer struct {
		items string
		src   cache.Source
		err   error
	}
	second := make(chan answer, 1)
	go func() {
		items, src, err := h.s.ListCached(context.Background(), "f", "tools/list", nil, CallOptions{})
		second <- answer{string(items), src, err}
	}()
	err := <-first
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), `"f"`) {
		t.Fatalf("first caller: %v; want its deadline, naming the server", err)
	}
	got := <-second
	if got.err != nil || got.src != cache.SourceCoalesced || !strings.Contains(got.items, "echo") {
		t.Fatalf("second caller: %v %v %.80s", got.err, got.src, got.items)
	}
	if n := h.upstream("f", "tools/list"); n != 1 {
		t.Fatalf("child saw %d tools/list, want 1", n)
	}
}

func TestCacheLegacyListChanged(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("f", "legacy")}}, nil)
	first := h.wantList("f", "tools/list", cache.SourceFetched)
	if again := h.wantList("f", "tools/list", cache.SourceHit); again != first {
		t.Fatalf("hit %s differs from fetch %s", again, first)
	}
	h.wantList("f", "prompts/list", cache.SourceFetched)
	h.wantList("f", "prompts/list", cache.SourceHit)

	// The fake sends list_changed before the tool's result, so by the time
	// Call returns the notification has been handled.
	if _, err := h.s.Call(context.Background(), "f", toolCall("changed", map[string]any{"kind": "tools"}), CallOptions{}); err != nil {
		t.Fatal(err)
	}
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.wantList("f", "tools/list", cache.SourceHit)
	h.wantList("f", "prompts/list", cache.SourceHit)
	if got := h.upstream("f", "tools/list"); got != 2 {
		t.Fatalf("child saw %d tools/list, want 2", got)
	}
}

func TestCacheModernTTL(t *testing.T) {
	clk := newFakeClock()
	h := newHarness(t, Options{NoCacheListens: true, Specs: []Spec{withTTL(fakeSpec("f", "modern"), "5000")}}, clk.install)
	h.wantList("f", "tools/list", cache.SourceFetched)
	clk.advance(4999 * time.Millisecond)
	h.wantList("f", "tools/list", cache.SourceHit)
	clk.advance(time.Millisecond)
	h.wantList("f", "tools/list", cache.SourceFetched)
	if got := h.upstream("f", "tools/list"); got != 2 {
		t.Fatalf("child saw %d tools/list, want 2", got)
	}
}

func TestCacheModernTTLZeroNotServedStale(t *testing.T) {
	h := newHarness(t, Options{NoCacheListens: true, Specs: []Spec{withTTL(fakeSpec("f", "modern"), "0")}}, nil)
	for range 3 {
		h.wantList("f", "tools/list", cache.SourceFetched)
		if _, src, err := h.s.CallCached(context.Background(), "f", &session.Request{Method: "resources/read", Params: json.RawMessage(`{"uri":"fake://hello"}`)}, CallOptions{}); err != nil || src != cache.SourceFetched {
			t.Fatalf("read: %v %v", src, err)
		}
	}
	if got := h.upstream("f", "tools/list"); got != 3 {
		t.Fatalf("child saw %d tools/list, want 3", got)
	}
}

// A modern listen acknowledged by the child (reported by the subscriptions
// code through SetCachePromises) keeps ttlMs-0 lists until the notification.
func TestCacheModernListenPromise(t *testing.T) {
	h := newHarness(t, Options{NoCacheListens: true, Specs: []Spec{withTTL(fakeSpec("f", "modern"), "0")}}, nil)
	h.mustEcho("f", "warm")
	pid := h.status("f").Pid
	if err := h.s.SetCachePromises("f", pid+1, cache.Promises{Tools: true}); err != nil {
		t.Fatal(err)
	}
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.wantList("f", "tools/list", cache.SourceFetched) // another process's promise is ignored
	if err := h.s.SetCachePromises("f", pid, cache.Promises{Tools: true, URIs: []string{"fake://hello"}}); err != nil {
		t.Fatal(err)
	}
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.wantList("f", "tools/list", cache.SourceHit)
	read := &session.Request{Method: "resources/read", Params: json.RawMessage(`{"uri":"fake://hello"}`)}
	for _, want := range []cache.Source{cache.SourceFetched, cache.SourceHit} {
		if _, src, err := h.s.CallCached(context.Background(), "f", read, CallOptions{}); err != nil || src != want {
			t.Fatalf("read: %v %v, want %v", src, err, want)
		}
	}
	h.s.ObserveNotification("f", session.Notification{Method: "notifications/tools/list_changed", Params: json.RawMessage(`{"_meta":{"io.modelcontextprotocol/subscriptionId":7}}`)})
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.s.ObserveNotification("f", session.Notification{Method: "notifications/resources/updated", Params: json.RawMessage(`{"uri":"fake://hello"}`)})
	if _, src, _ := h.s.CallCached(context.Background(), "f", read, CallOptions{}); src != cache.SourceFetched {
		t.Fatalf("read after resources/updated: %v", src)
	}
	// The listen ended: lists are no longer kept.
	if err := h.s.SetCachePromises("f", pid, cache.Promises{}); err != nil {
		t.Fatal(err)
	}
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.wantList("f", "tools/list", cache.SourceFetched)
}

func TestCacheEmptiedOnRestartAndKill(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("f", "legacy")}}, nil)
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.wantList("f", "tools/list", cache.SourceHit)
	if _, err := h.s.Restart(context.Background(), "f"); err != nil {
		t.Fatal(err)
	}
	if st := h.status("f").Cache; st.Entries != 0 || st.Bytes != 0 {
		t.Fatalf("cache after restart: %+v", st)
	}
	h.wantList("f", "tools/list", cache.SourceFetched)
	h.wantList("f", "tools/list", cache.SourceHit)

	pid := h.status("f").Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exit", func() bool { return h.count("f", EventExited) == 1 })
	if st := h.status("f").Cache; st.Entries != 0 {
		t.Fatalf("cache after the child died: %+v", st)
	}
	h.wantList("f", "tools/list", cache.SourceFetched)
	if got := h.upstream("f", "tools/list"); got != 1 {
		t.Fatalf("new child saw %d tools/list, want 1", got)
	}
}

func TestCachePolicies(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{
		withCache(fakeSpec("never", "legacy"), "never"),
		withCache(withTTL(fakeSpec("always", "modern"), "0"), "always"),
		withCache(withTTL(fakeSpec("ttl", "modern"), "0"), "1h"),
	}}, nil)
	h.wantList("never", "tools/list", cache.SourceFetched)
	h.wantList("never", "tools/list", cache.SourceFetched)
	h.wantList("always", "tools/list", cache.SourceFetched)
	h.wantList("always", "tools/list", cache.SourceHit)
	h.wantList("ttl", "tools/list", cache.SourceFetched)
	h.wantList("ttl", "tools/list", cache.SourceHit)
	if st := h.status("ttl").Cache; st.Policy != "1h0m0s" || st.Hits != 1 || st.Misses != 1 || st.Entries != 1 || st.Bytes == 0 {
		t.Fatalf("stats %+v", st)
	}
	n, err := h.s.ClearCache("always")
	if err != nil || n != 1 {
		t.Fatalf("ClearCache = %d, %v", n, err)
	}
	h.wantList("always", "tools/list", cache.SourceFetched)
	h.wantList("ttl", "tools/list", cache.SourceHit)
	if n, err := h.s.ClearCache(""); err != nil || n != 2 {
		t.Fatalf("ClearCache(all) = %d, %v", n, err)
	}
	h.wantList("ttl", "tools/list", cache.SourceFetched)
	if _, err := h.s.ClearCache("nope"); err == nil {
		t.Fatal("ClearCache of an unknown server succeeded")
	}
}

// resources/read: cached bytes are the child's bytes; errors and
// requests with requestState are never cached.
func TestCacheRead(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{withCache(fakeSpec("f", "modern"), "always")}}, nil)
	read := func(params string) (*session.Response, cache.Source) {
		t.Helper()
		resp, src, err := h.s.CallCached(context.Background(), "f", &session.Request{Method: "resources/read", Params: json.RawMessage(params)}, CallOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return resp, src
	}
	direct, err := h.s.Call(context.Background(), "f", &session.Request{Method: "resources/read", Params: json.RawMessage(`{"uri":"fake://hello"}`)}, CallOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fetched, src := read(`{"uri":"fake://hello"}`)
	if src != cache.SourceFetched {
		t.Fatalf("first read %v", src)
	}
	hit, src := read(`{"_meta":{"progressToken":"x"},"uri":"fake://hello"}`)
	if src != cache.SourceHit {
		t.Fatalf("second read %v", src)
	}
	// The fake stamps serverInfo but nothing per request, so the direct
	// answer, the fetched one and the hit are the same bytes.
	if !bytes.Equal(hit.Result, fetched.Result) || !bytes.Equal(hit.Result, direct.Result) {
		t.Fatalf("hit %s, fetched %s, direct %s", hit.Result, fetched.Result, direct.Result)
	}
	for range 2 {
		resp, src := read(`{"uri":"fake://missing"}`)
		if resp.Error == nil || resp.Error.Code != -32602 || src != cache.SourceFetched {
			t.Fatalf("missing resource: %+v %v", resp, src)
		}
		if _, src := read(`{"uri":"fake://hello","requestState":"s"}`); src != cache.SourceFetched {
			t.Fatalf("requestState read %v", src)
		}
	}
	if got := h.upstream("f", "resources/read"); got != 1+1+4 {
		t.Fatalf("child saw %d resources/read, want 6", got)
	}
	// Generic calls of list methods cache one page each.
	page := &session.Request{Method: "tools/list", Params: json.RawMessage(`{}`)}
	for _, want := range []cache.Source{cache.SourceFetched, cache.SourceHit} {
		if _, src, err := h.s.CallCached(context.Background(), "f", page, CallOptions{}); err != nil || src != want {
			t.Fatalf("page: %v %v, want %v", src, err, want)
		}
	}
	// Never cached: tools/call.
	for range 2 {
		if _, src, err := h.s.CallCached(context.Background(), "f", toolCall("echo", map[string]any{"message": "x"}), CallOptions{}); err != nil || src != cache.SourceFetched {
			t.Fatalf("tools/call: %v %v", src, err)
		}
	}
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
