package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// clock is a manual clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_700_000_000, 0)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// counter is a Fetch that counts its calls and returns body with ttl.
type counter struct {
	n    atomic.Int64
	body func(n int64) []byte
	ttl  time.Duration
}

func (f *counter) fetch(context.Context) (Result, error) {
	n := f.n.Add(1)
	b := []byte(fmt.Sprintf(`{"n":%d}`, n))
	if f.body != nil {
		b = f.body(n)
	}
	return Result{Body: b, TTL: f.ttl}, nil
}

func mustKey(t *testing.T, method, params string) Key {
	t.Helper()
	k, err := NewKey(method, []byte(params))
	if err != nil {
		t.Fatalf("NewKey(%s, %s): %v", method, params, err)
	}
	return k
}

func do(t *testing.T, c *Cache, k Key, f Fetch) (string, Source) {
	t.Helper()
	b, src, err := c.Do(context.Background(), k, f)
	if err != nil {
		t.Fatalf("Do(%s): %v", k, err)
	}
	return string(b), src
}

// waitFor polls cond until it holds or a generous deadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestValidity(t *testing.T) {
	tools := func(t *testing.T) Key { return mustKey(t, "tools/list", "") }
	tests := []struct {
		name     string
		policy   Policy
		ttl      time.Duration // server hint
		promises Promises
		advance  time.Duration
		wantHit  bool
	}{
		{name: "ttl 0 and no promise is never served", wantHit: false},
		{name: "server ttl fresh", ttl: time.Minute, advance: 59 * time.Second, wantHit: true},
		{name: "server ttl expired", ttl: time.Minute, advance: time.Minute, wantHit: false},
		{name: "listChanged promise", promises: Promises{Tools: true}, advance: 24 * time.Hour, wantHit: true},
		{name: "promise of another kind", promises: Promises{Prompts: true, Resources: true}, wantHit: false},
		{name: "config ttl", policy: Policy{Mode: ModeTTL, TTL: 10 * time.Second}, advance: 9 * time.Second, wantHit: true},
		{name: "config ttl expired", policy: Policy{Mode: ModeTTL, TTL: 10 * time.Second}, advance: 10 * time.Second, wantHit: false},
		{name: "longer of server and config ttl", policy: Policy{Mode: ModeTTL, TTL: 10 * time.Second}, ttl: time.Minute, advance: 30 * time.Second, wantHit: true},
		{name: "always", policy: Policy{Mode: ModeAlways}, advance: 24 * time.Hour, wantHit: true},
		{name: "never beats the server ttl", policy: Policy{Mode: ModeNever}, ttl: time.Minute, wantHit: false},
		{name: "never beats promises", policy: Policy{Mode: ModeNever}, promises: Promises{Tools: true}, wantHit: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := newClock()
			c := New(Options{Policy: tt.policy, Now: clk.Now})
			c.SetPromises(FromCapabilities, tt.promises)
			f := &counter{ttl: tt.ttl}
			first, src := do(t, c, tools(t), f.fetch)
			if src != SourceFetched {
				t.Fatalf("first source = %v, want fetched", src)
			}
			clk.Advance(tt.advance)
			second, src := do(t, c, tools(t), f.fetch)
			if got := src == SourceHit; got != tt.wantHit {
				t.Fatalf("second source = %v, want hit %v", src, tt.wantHit)
			}
			if tt.wantHit && second != first {
				t.Fatalf("hit = %s, want %s", second, first)
			}
			if !tt.wantHit && second == first {
				t.Fatalf("miss returned the old result %s", second)
			}
		})
	}
}

func TestHitIsTheFetchedBytes(t *testing.T) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	body := []byte(`{"resultType":"complete","contents":[{"uri":"a://b","text":"x \u00e9 y"}],  "ttlMs":0}`)
	k := mustKey(t, "resources/read", `{"uri":"a://b"}`)
	got1, _, _ := c.Do(context.Background(), k, func(context.Context) (Result, error) { return Result{Body: body}, nil })
	got2, src, _ := c.Do(context.Background(), k, func(context.Context) (Result, error) {
		t.Error("fetched on a hit")
		return Result{}, nil
	})
	if src != SourceHit || !bytes.Equal(got1, body) || !bytes.Equal(got2, body) {
		t.Fatalf("got %q (%v) and %q, want %q", got1, src, got2, body)
	}
}

func TestNotificationInvalidates(t *testing.T) {
	c := New(Options{})
	c.SetPromises(FromCapabilities, Promises{Tools: true, Prompts: true, Resources: true})
	c.SetPromises(FromSubscriptions, Promises{URIs: []string{"file:///p/", "x://one"}})
	keys := map[string]Key{
		"tools":     mustKey(t, "tools/list", ""),
		"prompts":   mustKey(t, "prompts/list", ""),
		"resources": mustKey(t, "resources/list", ""),
		"templates": mustKey(t, "resources/templates/list", ""),
		"main":      mustKey(t, "resources/read", `{"uri":"file:///p/src/main.go"}`),
		"one":       mustKey(t, "resources/read", `{"uri":"x://one"}`),
	}
	f := &counter{}
	fill := func() {
		for _, k := range keys {
			do(t, c, k, f.fetch)
		}
	}
	fill()
	tests := []struct {
		method, params string
		dropped        []string
	}{
		{"notifications/tools/list_changed", `{}`, []string{"tools"}},
		{"notifications/prompts/list_changed", ``, []string{"prompts"}},
		{"notifications/resources/list_changed", `{}`, []string{"resources", "templates"}},
		{"notifications/resources/updated", `{"uri":"file:///p/src/main.go"}`, []string{"main"}},
		{"notifications/resources/updated", `{"uri":"file:///p/"}`, []string{"main"}},
		{"notifications/resources/updated", `{"uri":"x://one"}`, []string{"one"}},
		{"notifications/message", `{"level":"info"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.method+tt.params, func(t *testing.T) {
			fill()
			for name, k := range keys {
				if _, src := do(t, c, k, f.fetch); src != SourceHit {
					t.Fatalf("%s not cached before the notification", name)
				}
			}
			if got := c.Observe(tt.method, []byte(tt.params)); got != (tt.dropped != nil) {
				t.Fatalf("Observe = %v", got)
			}
			for name, k := range keys {
				_, src := do(t, c, k, f.fetch)
				wantMiss := strings.Contains(" "+strings.Join(tt.dropped, " ")+" ", " "+name+" ")
				if (src != SourceHit) != wantMiss {
					t.Errorf("%s: source %v, want miss %v", name, src, wantMiss)
				}
			}
		})
	}
}

func TestSingleFlight(t *testing.T) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	release := make(chan struct{})
	var calls atomic.Int64
	fetch := func(context.Context) (Result, error) {
		calls.Add(1)
		<-release
		return Result{Body: []byte(`{"tools":[]}`)}, nil
	}
	const n = 50
	var wg sync.WaitGroup
	sources := make([]Source, n)
	for i := range n {
		// _meta differs per app: still one key.
		k := mustKey(t, "tools/list", fmt.Sprintf(`{"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"app%d"}}}`, i))
		wg.Go(func() {
			b, src, err := c.Do(context.Background(), k, fetch)
			if err != nil || string(b) != `{"tools":[]}` {
				t.Errorf("Do = %q, %v", b, err)
			}
			sources[i] = src
		})
	}
	waitFor(t, "49 coalesced callers", func() bool { return c.Stats().Coalesced == n-1 })
	close(release)
	wg.Wait()
	if got := calls.Load(); got != 1 {
		t.Fatalf("fetches = %d, want 1", got)
	}
	count := map[Source]int{}
	for _, s := range sources {
		count[s]++
	}
	if count[SourceFetched] != 1 || count[SourceCoalesced] != n-1 {
		t.Fatalf("sources = %v", count)
	}
	st := c.Stats()
	if st.Misses != 1 || st.Coalesced != n-1 || st.Entries != 1 {
		t.Fatalf("stats = %+v", st)
	}
	c.Wait()
}

func TestSingleFlightErrorIsSharedNotStored(t *testing.T) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	k := mustKey(t, "prompts/list", "{}")
	release := make(chan struct{})
	boom := errors.New("boom")
	var calls atomic.Int64
	fetch := func(context.Context) (Result, error) {
		if calls.Add(1) == 1 {
			<-release
			return Result{}, boom
		}
		return Result{Body: []byte(`{"prompts":[]}`)}, nil
	}
	var wg sync.WaitGroup
	for range 5 {
		wg.Go(func() {
			if _, _, err := c.Do(context.Background(), k, fetch); !errors.Is(err, boom) {
				t.Errorf("err = %v, want boom", err)
			}
		})
	}
	waitFor(t, "4 coalesced callers", func() bool { return c.Stats().Coalesced == 4 })
	close(release)
	wg.Wait()
	if body, src := do(t, c, k, fetch); src != SourceFetched || body != `{"prompts":[]}` {
		t.Fatalf("after the error: %s %v, want a new fetch", body, src)
	}
	if calls.Load() != 2 {
		t.Fatalf("fetches = %d, want 2", calls.Load())
	}
}

// A notification that arrives while a request is in flight: the callers
// already waiting get its answer, it is not stored, and a caller arriving
// after the notification starts a new request.
func TestInvalidateDuringFlight(t *testing.T) {
	c := New(Options{})
	c.SetPromises(FromCapabilities, Promises{Tools: true})
	k := mustKey(t, "tools/list", "")
	release := make(chan struct{})
	var calls atomic.Int64
	fetch := func(context.Context) (Result, error) {
		n := calls.Add(1)
		if n == 1 {
			<-release
		}
		return Result{Body: []byte(fmt.Sprintf(`{"v":%d}`, n))}, nil
	}
	first := make(chan string, 1)
	go func() {
		b, _, _ := c.Do(context.Background(), k, fetch)
		first <- string(b)
	}()
	waitFor(t, "the first fetch", func() bool { return calls.Load() == 1 })
	c.Observe("notifications/tools/list_changed", nil)
	if b, src := do(t, c, k, fetch); src != SourceFetched || b != `{"v":2}` {
		t.Fatalf("after the notification: %s %v, want a new fetch", b, src)
	}
	close(release)
	if b := <-first; b != `{"v":1}` {
		t.Fatalf("first caller got %s", b)
	}
	c.Wait()
	if b, src := do(t, c, k, fetch); src != SourceHit || b != `{"v":2}` {
		t.Fatalf("then: %s %v, want the second result from the cache", b, src)
	}
}

// A subscription promise made after the request started does not make its
// result valid until notified: the change may have happened before the
// promise. A capabilities promise holds for the whole process.
func TestPromiseMustPredateTheRequest(t *testing.T) {
	for _, tt := range []struct {
		src     PromiseSource
		wantHit bool
	}{{FromSubscriptions, false}, {FromCapabilities, true}} {
		c := New(Options{})
		k := mustKey(t, "tools/list", "")
		release := make(chan struct{})
		started := make(chan struct{})
		go func() {
			c.Do(context.Background(), k, func(context.Context) (Result, error) {
				close(started)
				<-release
				return Result{Body: []byte(`{}`)}, nil
			})
		}()
		<-started
		c.SetPromises(tt.src, Promises{Tools: true})
		close(release)
		c.Wait()
		if _, src := do(t, c, k, (&counter{}).fetch); (src == SourceHit) != tt.wantHit {
			t.Fatalf("source %d: %v, want hit %v", tt.src, src, tt.wantHit)
		}
		if _, src := do(t, c, k, (&counter{}).fetch); src != SourceHit {
			t.Fatalf("source %d: %v, want hit now that the promise predates the request", tt.src, src)
		}
	}
}

func TestWithdrawnPromiseInvalidates(t *testing.T) {
	c := New(Options{})
	c.SetPromises(FromSubscriptions, Promises{Tools: true, URIs: []string{"x://a"}})
	f := &counter{}
	tools, read := mustKey(t, "tools/list", ""), mustKey(t, "resources/read", `{"uri":"x://a"}`)
	do(t, c, tools, f.fetch)
	do(t, c, read, f.fetch)
	if st := c.Stats(); st.Entries != 2 {
		t.Fatalf("entries = %d, want 2", st.Entries)
	}
	c.SetPromises(FromSubscriptions, Promises{Tools: true})
	if _, src := do(t, c, read, f.fetch); src != SourceFetched {
		t.Fatalf("read after its subscription ended: %v, want fetched", src)
	}
	if _, src := do(t, c, tools, f.fetch); src != SourceHit {
		t.Fatalf("tools: %v, want hit", src)
	}
	c.SetPromises(FromSubscriptions, Promises{})
	if _, src := do(t, c, tools, f.fetch); src != SourceFetched {
		t.Fatalf("tools after the listen ended: %v, want fetched", src)
	}
}

func TestResetForgetsEntriesAndPromises(t *testing.T) {
	c := New(Options{})
	c.SetPromises(FromCapabilities, Promises{Tools: true})
	f := &counter{}
	k := mustKey(t, "tools/list", "")
	do(t, c, k, f.fetch)
	if n := c.Reset(); n != 1 {
		t.Fatalf("Reset dropped %d, want 1", n)
	}
	do(t, c, k, f.fetch)
	if _, src := do(t, c, k, f.fetch); src != SourceFetched {
		t.Fatalf("source = %v: promises of the old process survived", src)
	}
}

func TestCallerLeavesButOthersWait(t *testing.T) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	k := mustKey(t, "tools/list", "")
	fetch, fetchCtx, release := heldFetch(`{}`)
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	leaderDone := make(chan error, 1)
	go func() {
		_, _, err := c.Do(leaderCtx, k, fetch)
		leaderDone <- err
	}()
	fctx := <-fetchCtx
	otherDone := make(chan error, 1)
	go func() {
		_, _, err := c.Do(context.Background(), k, fetch)
		otherDone <- err
	}()
	waitFor(t, "the coalesced caller", func() bool { return c.Stats().Coalesced == 1 })
	cancelLeader()
	if err := <-leaderDone; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader err = %v", err)
	}
	if fctx.Err() != nil {
		t.Fatal("fetch cancelled while a caller still waits")
	}
	close(release)
	if err := <-otherDone; err != nil {
		t.Fatalf("other err = %v", err)
	}
	c.Wait()

	// When every caller leaves, the fetch is cancelled.
	k2 := mustKey(t, "prompts/list", "")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := c.Do(ctx, k2, func(ctx context.Context) (Result, error) {
			fetchCtx <- ctx
			<-ctx.Done()
			return Result{}, ctx.Err()
		})
		done <- err
	}()
	fctx = <-fetchCtx
	cancel()
	<-done
	<-fctx.Done()
	c.Wait()
}

// The first caller's deadline ends only its own wait: a caller that joined
// its request and may wait longer still gets the result.
func TestFirstCallersDeadlineDoesNotEndTheFetch(t *testing.T) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	k := mustKey(t, "tools/list", "")
	fetch, fetchCtx, release := heldFetch(`{"tools":[]}`)
	leaderCtx, cancelLeader := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelLeader()
	leaderDone := make(chan error, 1)
	go func() {
		_, _, err := c.Do(leaderCtx, k, fetch)
		leaderDone <- err
	}()
	fctx := <-fetchCtx
	if _, ok := fctx.Deadline(); ok {
		t.Error("the fetch carries the first caller's deadline")
	}
	otherDone := make(chan error, 1)
	var otherBody []byte
	go func() {
		b, _, err := c.Do(context.Background(), k, fetch)
		otherBody = b
		otherDone <- err
	}()
	waitFor(t, "the coalesced caller", func() bool { return c.Stats().Coalesced == 1 })
	if err := <-leaderDone; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("leader err = %v, want its deadline", err)
	}
	if fctx.Err() != nil {
		t.Fatalf("fetch ended (%v) at the first caller's deadline while another caller waits", fctx.Err())
	}
	close(release)
	if err := <-otherDone; err != nil {
		t.Fatalf("other err = %v", err)
	}
	if string(otherBody) != `{"tools":[]}` {
		t.Fatalf("other body = %s", otherBody)
	}
	c.Wait()
}

func TestNeverDoesNotCoalesce(t *testing.T) {
	c := New(Options{Policy: Policy{Mode: ModeNever}})
	k := mustKey(t, "tools/list", "")
	var calls atomic.Int64
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			c.Do(context.Background(), k, func(context.Context) (Result, error) {
				calls.Add(1)
				<-release
				return Result{Body: []byte(`{}`)}, nil
			})
		})
	}
	waitFor(t, "three fetches", func() bool { return calls.Load() == 3 })
	close(release)
	wg.Wait()
}

func TestNoStoreResult(t *testing.T) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	k := mustKey(t, "resources/read", `{"uri":"x://a"}`)
	var calls atomic.Int64
	fetch := func(context.Context) (Result, error) {
		calls.Add(1)
		return Result{Body: []byte(`{"resultType":"input_required"}`), NoStore: true}, nil
	}
	do(t, c, k, fetch)
	do(t, c, k, fetch)
	if calls.Load() != 2 {
		t.Fatalf("fetches = %d, want 2", calls.Load())
	}
}

func TestLRUBounds(t *testing.T) {
	const maxEntries, maxBytes = 100, 4096
	c := New(Options{Policy: Policy{Mode: ModeAlways}, MaxReadEntries: maxEntries, MaxReadBytes: maxBytes})
	tools := mustKey(t, "tools/list", "")
	do(t, c, tools, (&counter{}).fetch)
	for i := range 10000 {
		k := mustKey(t, "resources/read", fmt.Sprintf(`{"uri":"x://r/%d"}`, i))
		size := 10 + i%90
		do(t, c, k, func(context.Context) (Result, error) {
			return Result{Body: bytes.Repeat([]byte("x"), size)}, nil
		})
		st := c.Stats()
		if c.reads.ll.Len() > maxEntries || c.reads.bytes > maxBytes || st.Bytes != c.reads.bytes+c.lists.bytes {
			t.Fatalf("after %d reads: %d entries, %d bytes", i+1, c.reads.ll.Len(), c.reads.bytes)
		}
	}
	// The most recent read is cached, the first is long gone, and reads never
	// evicted the list.
	if _, src := do(t, c, mustKey(t, "resources/read", `{"uri":"x://r/9999"}`), (&counter{}).fetch); src != SourceHit {
		t.Fatalf("latest read: %v", src)
	}
	if _, src := do(t, c, mustKey(t, "resources/read", `{"uri":"x://r/0"}`), (&counter{}).fetch); src != SourceFetched {
		t.Fatalf("first read: %v", src)
	}
	if _, src := do(t, c, tools, (&counter{}).fetch); src != SourceHit {
		t.Fatalf("tools/list evicted by reads")
	}
	if st := c.Stats(); st.Evictions < 9000 {
		t.Fatalf("evictions = %d", st.Evictions)
	}
	// An entry larger than the byte bound is not stored.
	big := mustKey(t, "resources/read", `{"uri":"x://big"}`)
	huge := func(context.Context) (Result, error) { return Result{Body: make([]byte, maxBytes+1)}, nil }
	do(t, c, big, huge)
	if _, src := do(t, c, big, huge); src != SourceFetched {
		t.Fatalf("oversize entry stored")
	}
}

func TestKeys(t *testing.T) {
	same := [][2]string{
		{`{"cursor":"a","_meta":{"progressToken":1}}`, `{ "_meta": {"x":2}, "cursor": "a" }`},
		{``, `{}`},
		{`{"_meta":{}}`, `null`},
	}
	for _, p := range same {
		a, b := mustKey(t, "tools/list", p[0]), mustKey(t, "tools/list", p[1])
		if a != b {
			t.Errorf("keys of %s and %s differ: %q %q", p[0], p[1], a, b)
		}
	}
	if mustKey(t, "tools/list", `{"cursor":"a"}`) == mustKey(t, "tools/list", `{"cursor":"b"}`) {
		t.Error("different cursors share a key")
	}
	if mustKey(t, "tools/list", ``) == mustKey(t, "prompts/list", ``) {
		t.Error("different methods share a key")
	}
	l1, _ := ListKey("tools/list", []byte(`{"cursor":"a"}`))
	l2, _ := ListKey("tools/list", nil)
	if l1 != l2 || l1 == mustKey(t, "tools/list", "") {
		t.Errorf("list keys: %q %q", l1, l2)
	}
	if k := mustKey(t, "resources/read", `{"uri":"x://a","_meta":{}}`); k.Kind != KindRead || k.URI != "x://a" {
		t.Errorf("read key = %+v", k)
	}
	never := []struct{ method, params string }{
		{"tools/call", `{"name":"x"}`},
		{"prompts/get", `{"name":"x"}`},
		{"completion/complete", `{}`},
		{"resources/read", `{"uri":"x://a","inputResponses":{}}`},
		{"resources/read", `{"uri":"x://a","requestState":"s"}`},
		{"resources/read", `{}`},
		{"tools/list", `[1]`},
	}
	for _, n := range never {
		if _, err := NewKey(n.method, []byte(n.params)); !errors.Is(err, ErrNotCacheable) {
			t.Errorf("NewKey(%s, %s) err = %v, want ErrNotCacheable", n.method, n.params, err)
		}
	}
	if _, err := ListKey("resources/read", nil); !errors.Is(err, ErrNotCacheable) {
		t.Errorf("ListKey(resources/read) err = %v", err)
	}
}

func TestHints(t *testing.T) {
	tests := []struct {
		result   string
		ttl      time.Duration
		storable bool
	}{
		{`{"tools":[]}`, 0, true},
		{`{"resultType":"complete","ttlMs":1500}`, 1500 * time.Millisecond, true},
		{`{"resultType":"complete","ttlMs":0}`, 0, true},
		{`{"ttlMs":-5}`, 0, true},
		{`{"ttlMs":"soon"}`, 0, true},
		{`{"resultType":"input_required","ttlMs":1000}`, 0, false},
		{`{"resultType":"future"}`, 0, false},
		{`[]`, 0, false},
	}
	for _, tt := range tests {
		ttl, ok := Hints([]byte(tt.result))
		if ttl != tt.ttl || ok != tt.storable {
			t.Errorf("Hints(%s) = %v, %v; want %v, %v", tt.result, ttl, ok, tt.ttl, tt.storable)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{
		"":       {},
		"never":  {Mode: ModeNever},
		"always": {Mode: ModeAlways},
		"90s":    {Mode: ModeTTL, TTL: 90 * time.Second},
	} {
		got, err := ParsePolicy(in)
		if err != nil || got != want || got.String() != strings.ReplaceAll(in, "90s", "1m30s") {
			t.Errorf("ParsePolicy(%q) = %+v, %v (%q)", in, got, err, got.String())
		}
	}
	for _, bad := range []string{"sometimes", "-1s", "0s"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) succeeded", bad)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		sub, uri string
		want     bool
	}{
		{"x://a", "x://a", true},
		{"file:///p/", "file:///p/src/x", true},
		{"file:///p", "file:///p/src/x", true},
		{"file:///p", "file:///project", false},
		{"x://a?q", "x://a", false},
	}
	for _, tt := range tests {
		if got := covers(tt.sub, tt.uri); got != tt.want {
			t.Errorf("covers(%q, %q) = %v", tt.sub, tt.uri, got)
		}
	}
}

// BenchmarkHit is the cost of one cache hit (the Do call only).
func BenchmarkHit(b *testing.B) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	k, _ := ListKey("tools/list", nil)
	body := bytes.Repeat([]byte("x"), 16<<10)
	c.Do(context.Background(), k, func(context.Context) (Result, error) { return Result{Body: body}, nil })
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, src, _ := c.Do(context.Background(), k, nil); src != SourceHit {
				b.Fatal("miss")
			}
		}
	})
}

// heldFetch returns a fetch that hands its context to fetchCtx and then
// waits until release is closed (answering body) or its context ends.
func heldFetch(body string) (fetch Fetch, fetchCtx chan context.Context, release chan struct{}) {
	ctxs := make(chan context.Context, 1)
	release = make(chan struct{})
	fetch = func(ctx context.Context) (Result, error) {
		ctxs <- ctx
		select {
		case <-release:
			return Result{Body: []byte(body)}, nil
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	return fetch, ctxs, release
}

// A key scoped to one declaration is another key than the unscoped one
// and than one scoped to another declaration; "" leaves it as it is.
func TestKeyScoped(t *testing.T) {
	k, err := ListKey("tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.Scoped("") != k {
		t.Error(`Scoped("") changed the key`)
	}
	a, b := k.Scoped("a"), k.Scoped("b")
	if a == k || a == b || a != k.Scoped("a") {
		t.Errorf("scoped keys %q %q %q", k, a, b)
	}
	if a.Kind != k.Kind {
		t.Errorf("scoping changed the kind: %v", a.Kind)
	}
}
