package cache

import (
	"bytes"
	"context"
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
