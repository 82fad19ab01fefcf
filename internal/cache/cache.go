package cache

import (
	"container/list"
	"context"
	"slices"
	"sync"
	"time"
)

// Defaults used when the matching Options field is zero.
const (
	// DefaultMaxReadEntries bounds the number of cached resources/read results.
	DefaultMaxReadEntries = 1000
	// DefaultMaxReadBytes bounds the bytes of cached resources/read results.
	DefaultMaxReadBytes = 64 << 20
	// maxListEntries bounds the cached list results (whole lists and single
	// pages); there are few per server.
	maxListEntries = 256
)

// Source tells where a response came from.
type Source uint8

// Sources of a response.
const (
	// SourceFetched: the child was asked for this caller (or the request is
	// not cacheable).
	SourceFetched Source = iota
	// SourceHit: served from the cache.
	SourceHit
	// SourceCoalesced: shared the answer of an identical request in flight.
	SourceCoalesced
)

func (s Source) String() string {
	switch s {
	case SourceHit:
		return "hit"
	case SourceCoalesced:
		return "coalesced"
	}
	return "fetched"
}

// Result is what a Fetch returns on success.
type Result struct {
	// Body is the bytes served to every caller and stored; the cache never
	// modifies or copies it, so a hit is byte for byte what was fetched.
	Body []byte
	// TTL is the server's ttlMs hint (see Hints); zero means none.
	TTL time.Duration
	// NoStore marks a result that must not be stored (input_required); it
	// is still handed to the callers coalesced on it.
	NoStore bool
}

// Fetch asks the child. It runs on a goroutine owned by the cache with a
// context that carries the first caller's values (not its deadline: a
// caller that joins later may wait longer) and is cancelled once every
// caller waiting for it has gone away. An error is handed to every waiting
// caller and never stored.
type Fetch func(ctx context.Context) (Result, error)

// Options configure a Cache. Zero values mean the documented defaults.
type Options struct {
	Policy Policy
	// MaxReadEntries and MaxReadBytes bound the resources/read LRU
	// (DefaultMaxReadEntries, DefaultMaxReadBytes). The list LRU has the
	// same byte bound, accounted separately.
	MaxReadEntries int
	MaxReadBytes   int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Stats are a cache's counters and size.
type Stats struct {
	Policy string
	// Hits were served from memory; Misses asked the child; Coalesced
	// shared a request in flight.
	Hits, Misses, Coalesced int64
	// Invalidations counts entries dropped by notifications, restarts,
	// reloads and clears (not evictions).
	Invalidations int64
	// Evictions counts entries dropped to respect the bounds.
	Evictions int64
	// Entries and Bytes are the current size (lists and reads).
	Entries, Bytes int64
}

// Cache is one server's result cache. All methods are safe for concurrent
// use; none calls out (fetches run on their own goroutines, without the
// lock).
type Cache struct {
	now func() time.Time

	wg sync.WaitGroup // running fetches

	mu          sync.Mutex // guards following
	policy      Policy
	entries     map[string]*entry
	lists       lru
	reads       lru
	flights     map[string]*flight
	promises    [numSources]Promises
	withdrawals uint64 // bumped whenever a promise is withdrawn
	stats       Stats
}

// entry is one stored result.
type entry struct {
	key     Key
	body    []byte
	exp     time.Time // fresh while now < exp (unless forever)
	forever bool      // until invalidated
	lru     *lru
	elem    *list.Element
}

func (e *entry) fresh(now time.Time) bool { return e.forever || now.Before(e.exp) }

// flight is one upstream request that callers wait for.
type flight struct {
	key    Key
	done   chan struct{} // closed once body/err are set
	body   []byte
	err    error
	cancel context.CancelFunc

	// Under Cache.mu:
	refs int // callers still waiting
	// detached: no longer joinable and its result is not stored
	// (invalidated meanwhile, or every caller left).
	detached bool
	// promised: a subscription promise covered the key when the request
	// started, and withdrawals was then at epoch.
	promised bool
	epoch    uint64
}

// New returns an empty cache.
func New(opts Options) *Cache {
	if opts.MaxReadEntries <= 0 {
		opts.MaxReadEntries = DefaultMaxReadEntries
	}
	if opts.MaxReadBytes <= 0 {
		opts.MaxReadBytes = DefaultMaxReadBytes
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cache{
		now:     opts.Now,
		policy:  opts.Policy,
		entries: map[string]*entry{},
		lists:   lru{maxEntries: maxListEntries, maxBytes: opts.MaxReadBytes},
		reads:   lru{maxEntries: opts.MaxReadEntries, maxBytes: opts.MaxReadBytes},
		flights: map[string]*flight{},
	}
}

// Do returns the result for key: from memory when a valid entry exists,
// else by joining an identical request in flight, else by running fetch.
// A caller whose ctx ends stops waiting at once; the fetch is cancelled
// only when no caller is left.
func (c *Cache) Do(ctx context.Context, key Key, fetch Fetch) ([]byte, Source, error) {
	c.mu.Lock()
	if c.policy.Mode == ModeNever {
		c.stats.Misses++
		c.mu.Unlock()
		res, err := fetch(ctx)
		return res.Body, SourceFetched, err
	}
	if e := c.entries[key.id]; e != nil {
		if e.fresh(c.now()) {
			c.stats.Hits++
			e.lru.ll.MoveToFront(e.elem)
			body := e.body
			c.mu.Unlock()
			return body, SourceHit, nil
		}
		c.removeLocked(e)
	}
	if f := c.flights[key.id]; f != nil {
		c.stats.Coalesced++
		f.refs++
		c.mu.Unlock()
		return c.wait(ctx, f, SourceCoalesced)
	}
	c.stats.Misses++
	fctx, cancel := flightContext(ctx)
	f := &flight{
		key:      key,
		done:     make(chan struct{}),
		cancel:   cancel,
		refs:     1,
		promised: c.promises[FromSubscriptions].coversKey(key),
		epoch:    c.withdrawals,
	}
	c.flights[key.id] = f
	c.wg.Add(1)
	c.mu.Unlock()
	go c.run(fctx, f, fetch)
	return c.wait(ctx, f, SourceFetched)
}

// flightContext keeps ctx's values but neither its cancellation nor its
// deadline: the fetch serves every coalesced caller, not only the first, so
// it ends when the last caller leaves (wait), each caller by its own ctx.
func flightContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.WithoutCancel(ctx))
}

func (c *Cache) wait(ctx context.Context, f *flight, src Source) ([]byte, Source, error) {
	select {
	case <-f.done:
		return f.body, src, f.err
	case <-ctx.Done():
	}
	c.mu.Lock()
	f.refs--
	last := f.refs == 0
	if last {
		c.detachLocked(f)
	}
	c.mu.Unlock()
	if last {
		f.cancel()
	}
	return nil, src, context.Cause(ctx)
}

func (c *Cache) run(ctx context.Context, f *flight, fetch Fetch) {
	defer c.wg.Done()
	defer f.cancel()
	res, err := fetch(ctx)
	arrived := c.now()
	c.mu.Lock()
	if !f.detached {
		c.detachLocked(f)
		if err == nil && !res.NoStore {
			c.storeLocked(f, res, arrived)
		}
	}
	f.body, f.err = res.Body, err
	c.mu.Unlock()
	close(f.done)
}

// detachLocked makes f unjoinable and keeps its result out of the cache.
func (c *Cache) detachLocked(f *flight) {
	f.detached = true
	if c.flights[f.key.id] == f {
		delete(c.flights, f.key.id)
	}
}

// storeLocked stores a fetched result if anything says it stays valid.
// "ttlMs ... works like HTTP max-age: fresh while now < t_received + ttlMs."
func (c *Cache) storeLocked(f *flight, res Result, arrived time.Time) {
	var exp time.Time
	forever := false
	switch c.policy.Mode {
	case ModeAlways:
		forever = true
	case ModeTTL:
		exp = arrived.Add(c.policy.TTL)
	}
	if res.TTL > 0 {
		if t := arrived.Add(res.TTL); t.After(exp) {
			exp = t
		}
	}
	// A capabilities promise holds for the whole life of the process, which
	// Reset ends; a subscription promise only if it predates the request.
	if c.promises[FromCapabilities].coversKey(f.key) ||
		f.promised && f.epoch == c.withdrawals && c.promises[FromSubscriptions].coversKey(f.key) {
		forever = true
	}
	if !forever && !exp.After(arrived) {
		return // "0 = stale immediately"
	}
	if old := c.entries[f.key.id]; old != nil {
		c.removeLocked(old)
	}
	l := &c.lists
	if f.key.Kind == KindRead {
		l = &c.reads
	}
	size := int64(len(res.Body))
	if size > l.maxBytes {
		return
	}
	e := &entry{key: f.key, body: res.Body, exp: exp, forever: forever, lru: l}
	e.elem = l.ll.PushFront(e)
	l.bytes += size
	c.entries[f.key.id] = e
	for l.ll.Len() > l.maxEntries || l.bytes > l.maxBytes {
		c.removeLocked(l.ll.Back().Value.(*entry))
		c.stats.Evictions++
	}
}

func (c *Cache) removeLocked(e *entry) {
	e.lru.ll.Remove(e.elem)
	e.lru.bytes -= int64(len(e.body))
	delete(c.entries, e.key.id)
}

// Invalidate drops the results ch affects and detaches the matching
// requests in flight; it returns how many entries were dropped. Call it
// before the notification that caused it is delivered to anyone.
func (c *Cache) Invalidate(ch Change) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.invalidateLocked(ch)
}

func (c *Cache) invalidateLocked(ch Change) int {
	match := func(k Key) bool {
		if k.Kind != ch.Kind {
			return false
		}
		return ch.Kind != KindRead || ch.URI == "" || affects(ch.URI, k.URI)
	}
	l := &c.lists
	if ch.Kind == KindRead {
		l = &c.reads
	}
	n := 0
	for el := l.ll.Front(); el != nil; {
		next := el.Next()
		if e := el.Value.(*entry); match(e.key) {
			c.removeLocked(e)
			n++
		}
		el = next
	}
	for _, f := range c.flights {
		if match(f.key) {
			c.detachLocked(f)
		}
	}
	c.stats.Invalidations += int64(n)
	return n
}

// Observe invalidates what a child notification announces
// (notifications/tools/list_changed, .../prompts/list_changed,
// .../resources/list_changed, .../resources/updated) and reports whether the
// notification concerned the cache.
func (c *Cache) Observe(method string, params []byte) bool {
	ch, ok := ChangeOf(method, params)
	if ok {
		c.Invalidate(ch)
	}
	return ok
}

// Clear drops every entry and detaches every request in flight; it
// returns how many entries were dropped. Promises are kept.
func (c *Cache) Clear() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clearLocked()
}

func (c *Cache) clearLocked() int {
	n := len(c.entries)
	clear(c.entries)
	for _, l := range []*lru{&c.lists, &c.reads} {
		l.ll.Init()
		l.bytes = 0
	}
	for _, f := range c.flights {
		c.detachLocked(f)
	}
	c.stats.Invalidations += int64(n)
	return n
}

// Reset is Clear for a new process of the server: it also forgets every
// promise, since "after any restart ... the server holds nothing".
func (c *Cache) Reset() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.clearLocked()
	c.promises = [numSources]Promises{}
	c.withdrawals++
	return n
}

// SetPolicy replaces the config policy (a reload); existing entries are
// dropped, since they were stored under the old rules.
func (c *Cache) SetPolicy(p Policy) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.policy = p
	c.clearLocked()
}

// SetPromises replaces the promises of one source. Results that relied on
// a withdrawn promise are dropped at once.
func (c *Cache) SetPromises(src PromiseSource, p Promises) {
	if src >= numSources {
		return
	}
	p.URIs = slices.Compact(slices.Sorted(slices.Values(p.URIs))) // coversKey looks them up
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.promises[src]
	c.promises[src] = p
	withdrawn := false
	for _, k := range []Kind{KindTools, KindPrompts, KindResources} {
		if old.kind(k) && !p.kind(k) {
			withdrawn = true
			c.invalidateLocked(Change{Kind: k})
		}
	}
	for _, u := range withdrawnURIs(old.URIs, p.URIs) {
		withdrawn = true
		c.invalidateLocked(Change{Kind: KindRead, URI: u})
	}
	if withdrawn {
		c.withdrawals++
	}
}

// Stats returns the counters and current size.
func (c *Cache) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.stats
	st.Policy = c.policy.String()
	st.Entries = int64(len(c.entries))
	st.Bytes = c.lists.bytes + c.reads.bytes
	return st
}

// Wait blocks until every fetch the cache started has returned.
func (c *Cache) Wait() { c.wg.Wait() }

// lru is one bounded recency list of entries (front = most recent).
type lru struct {
	ll         list.List
	maxEntries int
	maxBytes   int64
	bytes      int64
}
