package cache

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

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
