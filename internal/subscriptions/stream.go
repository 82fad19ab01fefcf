package subscriptions

import (
	"maps"
	"slices"
	"sync"
	"time"
)

// AppInfo identifies the app that opened a stream, for status.
type AppInfo struct {
	Name    string
	Version string
	Pid     int
	// Conn identifies the app's connection (0 when unknown).
	Conn uint64
	// Profile is the profile the stream was opened under ("" none): the
	// profile's own events (ProfileListsChanged) reach only its streams.
	Profile string
	// Scope picks the instances of shared servers the stream reaches,
	// handed to InstanceSource as is (instances.go); nil: none.
	Scope any
}

// Stream is one app's subscription: what it watches and its queue. Read it
// by waiting on Ready and calling Take until Take reports the end; Close it
// when the app goes away.
type Stream struct {
	id      uint64
	app     AppInfo
	m       *Manager
	q       *queue
	created time.Time

	closeOnce sync.Once

	mu      sync.Mutex      // guards the fields below
	servers map[string]bool // nil: every server
	watch   Watch           // kinds; URIs are in uris
	uris    map[string]map[string]bool
	// sorted caches uris[server] as a sorted slice (wantsFrom), shared
	// read-only with its callers; an entry is deleted (setURIs) whenever
	// uris[server] changes.
	sorted map[string][]string
	closed bool // Close: no more events
	ended  bool // closed or lagged: nothing is wanted upstream any more

	// What the stream adds to the manager's counts (interest.go), by
	// server and for every server; guarded by Manager.interest.mu.
	counted    map[string]wants
	countedAll wants
}

// ID is the stream's subscription id (for Manager.Update).
func (st *Stream) ID() uint64 { return st.id }

// Ready receives when events are queued.
func (st *Stream) Ready() <-chan struct{} { return st.q.ready }

// Take appends the queued events to buf, oldest first, and reports whether
// the stream has ended (the last event is then lagged or error). The events
// are shared with other streams: read them, never change them.
func (st *Stream) Take(buf []*Event) ([]*Event, bool) { return st.q.take(buf) }

// Stats returns the stream's queue counters.
func (st *Stream) Stats() QueueStats { return st.q.snapshot() }

// Close ends the stream and releases its upstream subscriptions (the last
// one leaving a URI unsubscribes it on the child). Idempotent.
func (st *Stream) Close() {
	st.closeOnce.Do(func() {
		st.q.close()
		st.m.remove(st)
	})
}

// end marks the stream as wanting nothing upstream any more (and, with
// closed, as taking no more events) and returns what it wanted until then
// (leave.go), read in the same critical section.
func (st *Stream) end(closed bool) left {
	st.mu.Lock()
	defer st.mu.Unlock()
	l := left{ended: st.ended}
	if !st.ended {
		l.servers = maps.Clone(st.servers)
		l.flags = wants{tools: st.watch.ToolsListChanged, prompts: st.watch.PromptsListChanged,
			resources: st.watch.ResourcesListChanged, logs: st.watch.Logs}
		l.uris = map[string][]string{}
		for server := range st.uris {
			l.uris[server] = st.sortedLocked(server)
		}
	}
	st.ended = true
	st.closed = st.closed || closed
	return l
}

// fail ends the stream with a terminal error event.
func (st *Stream) fail(server, msg string) {
	st.endWith(&Event{Kind: KindError, Server: server, Error: msg, Time: time.Now()})
}

// endWith queues ev, the stream's last event, and closes the stream.
func (st *Stream) endWith(ev *Event) {
	st.q.push(ev)
	st.Close()
}

// watches reports whether the stream watches server at all.
func (st *Stream) watchesLocked(server string) bool {
	return st.servers == nil || st.servers[server]
}

// wants reports whether ev is for this stream.
func (st *Stream) wants(ev *Event) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.closed || !st.watchesLocked(ev.Server) {
		return false
	}
	w := &st.watch
	switch ev.Kind {
	case KindToolsListChanged:
		return w.ToolsListChanged
	case KindPromptsListChanged:
		return w.PromptsListChanged
	case KindResourcesListChanged:
		return w.ResourcesListChanged
	case KindResourceUpdated:
		set := st.uris[ev.Server]
		if set[ev.URI] { // the usual case, without iterating the set
			return true
		}
		// A resource below a watched one, unless the stream's profile
		// hides it.
		return parentWatched(set, ev.URI) && st.allows(ev.Server, ev.URI)
	case KindState:
		return w.State || ev.State == StateAdded || ev.State == StateRemoved
	case KindLog:
		return w.Logs
	case KindTaskStatus:
		return w.TaskStatus
	case KindRestarted:
		return w.ToolsListChanged || w.PromptsListChanged || w.ResourcesListChanged || w.Logs || len(st.uris[ev.Server]) > 0
	}
	return false
}

// allows reports whether the stream may watch uri on server (Watch.AllowURI).
func (st *Stream) allows(server, uri string) bool {
	if s, _, ok := taskOf(uri); ok { // tasks.go
		return s == server
	}
	return st.watch.AllowURI == nil || st.watch.AllowURI(server, uri)
}

// parentWatched reports whether set (of non-empty URIs) holds a parent of
// updated as uriMatches has it. Only updated's prefixes ending at or
// before a '/' can be one, so each of those is looked up: O(depth) per
// event for a stream watching thousands of URIs, instead of trying each.
func parentWatched(set map[string]bool, updated string) bool {
	for i := 1; i < len(updated); i++ {
		if (updated[i-1] == '/' || updated[i] == '/') && set[updated[:i]] {
			return true
		}
	}
	return false
}

// wantsFrom returns what the stream needs upstream from server.
func (st *Stream) wantsFrom(server string) (w wants) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended || !st.watchesLocked(server) {
		return w
	}
	w.tools = st.watch.ToolsListChanged
	w.prompts = st.watch.PromptsListChanged
	w.resources = st.watch.ResourcesListChanged
	w.logs = st.watch.Logs
	w.uris = st.sortedLocked(server)
	return w
}

// sortedLocked returns uris[server] sorted, from the cache when it has
// the server; st.mu is held. Nobody may change the slice it returns.
func (st *Stream) sortedLocked(server string) []string {
	if s, ok := st.sorted[server]; ok {
		return s
	}
	s := slices.Clip(slices.Sorted(maps.Keys(st.uris[server])))
	if st.sorted == nil {
		st.sorted = map[string][]string{}
	}
	st.sorted[server] = s
	return s
}

// changedLocked drops the cached sorted URIs of server after uris[server]
// changed; st.mu is held.
func (st *Stream) changedLocked(server string) { delete(st.sorted, server) }

// wants is one stream's (or the union's) upstream interest in one server.
type wants struct {
	tools, prompts, resources, logs bool
	uris                            []string
}

func (w wants) any() bool {
	return w.tools || w.prompts || w.resources || w.logs || len(w.uris) > 0
}
