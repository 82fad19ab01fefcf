package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"unsafe"
)

// ErrWithheld is wrapped by the error that refuses a call of a withheld tool.
var ErrWithheld = errors.New("tool withheld")

// Kind says how a tool differs from its pinned definition.
type Kind string

// Kinds of change.
const (
	KindChanged Kind = "changed"
	KindAdded   Kind = "added"
	KindRemoved Kind = "removed"
)

// Change is one tool that differs from its pinned definition.
type Change struct {
	Tool string
	Kind Kind
	// Pinned is the approved definition (KindChanged, KindRemoved).
	Pinned Definition
	// Current is what the server lists now (KindChanged, KindAdded).
	Current Definition
	// Members are the pinned members that differ (KindChanged).
	Members []string
	// Variant is the declaration variant the change is of (Key "": the
	// shared one).
	Variant Variant
}

// Compare returns the tools of current that differ from pinned, sorted by
// tool name.
func Compare(pinned, current Tools) []Change {
	var out []Change
	for name, cur := range current {
		old, ok := pinned[name]
		switch {
		case !ok:
			out = append(out, Change{Tool: name, Kind: KindAdded, Current: cur})
		case old.Digest != cur.Digest:
			out = append(out, Change{Tool: name, Kind: KindChanged, Pinned: old, Current: cur, Members: ChangedMembers(old, cur)})
		}
	}
	for name, old := range pinned {
		if _, ok := current[name]; !ok {
			out = append(out, Change{Tool: name, Kind: KindRemoved, Pinned: old})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Tool < out[j].Tool })
	return out
}

// WithheldError refuses a call of a tool whose definition is not approved.
type WithheldError struct {
	Server string
	Change Change
}

func (e *WithheldError) Error() string {
	c := e.Change
	what := "is new since the server's tools were approved"
	if c.Kind == KindChanged {
		what = fmt.Sprintf("changed since it was approved (%s)", strings.Join(c.Members, ", "))
	}
	return fmt.Sprintf("tool %q of server %q is withheld: its definition %s; review it with \"mcpdctl tools diff %s\" and accept it with \"mcpdctl tools approve %s %s\"",
		c.Tool, e.Server, what, e.Server, e.Server, c.Tool)
}

func (e *WithheldError) Unwrap() error { return ErrWithheld }

// Book is the pinning state of every server: what is pinned (loaded from
// the Store on first use), what each server lists now, and what differs.
// Its methods are safe for concurrent use.
type Book struct {
	store *Store

	mu      sync.Mutex // guards servers, tick and each serverPins.used; taken alone
	servers map[string]*serverPins
	tick    uint64 // counts variant uses, for serverPins.used
	// maxVariants bounds the declaration variants kept per server (bound.go).
	maxVariants int
}

// serverPins is the state of one server's variant.
type serverPins struct {
	variant Variant // set at creation
	used    uint64  // Book.tick at the variant's last use; guarded by Book.mu
	// io serialises the server's pins file (reading it once, saving it) and
	// every change of loaded and pinned, which are written with io and mu
	// both held: either one is enough to read them. Order: io, then mu.
	io sync.Mutex
	// mu guards all the fields below; it is held for no disk I/O, so a slow
	// pins file holds up no Check, Pending or Invalidate.
	mu      sync.Mutex
	loaded  bool  // pinned was read from the store (or there was none)
	pinned  Tools // nil until the first list is seen when there was no file
	current Tools // the last list seen; nil before one
	changes []Change
	// withheld maps changed and added tools to their change.
	withheld map[string]Change
	// verified: the last list seen came from process pid, and no
	// list_changed arrived since.
	verified bool
	pid      int
	// invalidations counts Invalidate calls, so that an Observe that read
	// the file meanwhile does not mark a list from before them verified.
	invalidations uint64
	// lastIn and lastOut memoize Filter for the list it saw last (the
	// cache returns the same bytes on every hit).
	lastIn  []byte
	lastOut []byte
	gen     uint64 // counts changes of withheld; memo is valid for memoGen
	memoGen uint64
	// reported is the change set last reported by Observe.
	reported string
}

// NewBook returns an empty book over store.
func NewBook(store *Store) *Book {
	return &Book{store: store, servers: make(map[string]*serverPins), maxVariants: MaxVariants}
}

// Store returns the book's store.
func (b *Book) Store() *Store { return b.store }

func (b *Book) server(name string) *serverPins { return b.serverOf(name, Variant{}) }

// serverOf is the state of server's variant v, made on first use; a new
// declaration variant past the bound drops an old one (bound.go).
func (b *Book) serverOf(name string, v Variant) *serverPins {
	b.mu.Lock()
	k := variantKey(name, v.Key)
	b.tick++
	sp := b.servers[k]
	if sp != nil {
		sp.used = b.tick
		b.mu.Unlock()
		return sp
	}
	sp = &serverPins{variant: v, used: b.tick}
	b.servers[k] = sp
	b.mu.Unlock()
	if v.Key != "" {
		b.bound(name, v.Key)
	}
	return sp
}

// load reads the server's pins once. Neither sp.io nor sp.mu may be held.
func (b *Book) load(name string, sp *serverPins) error {
	sp.mu.Lock()
	loaded := sp.loaded
	sp.mu.Unlock()
	if loaded {
		return nil
	}
	sp.io.Lock()
	defer sp.io.Unlock()
	if sp.loaded { // loaded meanwhile
		return nil
	}
	tools, ok, err := b.store.LoadVariant(name, sp.variant)
	if err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.loaded = true
	if ok {
		sp.pinned = tools
	}
	return nil
}

// pinFirst pins cur, saving it, when nothing is pinned for the server yet;
// it reports whether it did. Neither sp.io nor sp.mu may be held.
func (b *Book) pinFirst(name string, sp *serverPins, cur Tools) (bool, error) {
	sp.mu.Lock()
	pinned := sp.pinned != nil
	sp.mu.Unlock()
	if pinned {
		return false, nil
	}
	sp.io.Lock()
	defer sp.io.Unlock()
	if sp.pinned != nil { // pinned meanwhile
		return false, nil
	}
	if err := b.savePins(name, sp, cur, nil); err != nil {
		return false, err
	}
	return true, nil
}

// savePins saves tools as the server's pins, then makes them the pinned
// ones and runs then (if not nil) under sp.mu. sp.io must be held.
func (b *Book) savePins(name string, sp *serverPins, tools Tools, then func()) error {
	if err := b.store.SaveVariant(name, sp.variant, tools); err != nil {
		return err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	sp.pinned = tools
	if then != nil {
		then()
	}
	return nil
}

// Observation is what Observe learned from a list.
type Observation struct {
	// Items is the list to serve: under ModeEnforce without the withheld
	// tools, else the list as given.
	Items json.RawMessage
	// New is set when the set of changes differs from the one last
	// reported (to log it once); Changes holds it.
	New     bool
	Changes []Change
	// FirstPin is set when this list was pinned as the server's first.
	FirstPin bool
}

// Observe records the merged tools/list items of server, listed by the
// process pid, and returns what to serve under mode. On first sight (no
// pins yet) the list is pinned. A list that cannot be read is served as it
// is under ModeWarn and refused under ModeEnforce.
func (b *Book) Observe(name string, mode Mode, pid int, items json.RawMessage) (Observation, error) {
	return b.ObserveVariant(name, Variant{}, mode, pid, items)
}

// ObserveVariant is Observe of a list of server's variant v: a variant
// seen for the first time is pinned, as a server is (variant.go).
func (b *Book) ObserveVariant(name string, v Variant, mode Mode, pid int, items json.RawMessage) (Observation, error) {
	if mode == ModeOff {
		return Observation{Items: items}, nil
	}
	sp := b.serverOf(name, v)
	sp.mu.Lock()
	if sameBytes(sp.lastIn, items) && sp.memoGen == sp.gen && sp.verified {
		defer sp.mu.Unlock()
		return Observation{Items: b.served(sp, mode, items)}, nil
	}
	invalidations := sp.invalidations
	sp.mu.Unlock()
	if err := b.load(name, sp); err != nil {
		return Observation{Items: items}, err
	}
	cur, err := ParseList(items)
	if err != nil {
		return Observation{Items: items}, err
	}
	var obs Observation
	if obs.FirstPin, err = b.pinFirst(name, sp, cur); err != nil {
		return Observation{Items: items}, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	// An Invalidate while the file was read (a list change announced
	// meanwhile) leaves the server unverified: this list may predate it.
	sp.current, sp.verified, sp.pid = cur, sp.invalidations == invalidations, pid
	b.recompute(sp)
	sp.lastIn, sp.lastOut, sp.memoGen = items, nil, sp.gen
	obs.Items = b.served(sp, mode, items)
	obs.Changes = slices.Clone(sp.changes)
	if key := changeKey(sp.changes); key != sp.reported {
		sp.reported, obs.New = key, true
	}
	return obs, nil
}

// served returns items without the withheld tools under ModeEnforce,
// memoized for the same list.
func (b *Book) served(sp *serverPins, mode Mode, items json.RawMessage) json.RawMessage {
	if mode != ModeEnforce || len(sp.withheld) == 0 {
		return items
	}
	if sp.lastOut != nil && sameBytes(sp.lastIn, items) {
		return sp.lastOut
	}
	out, err := filterItems(items, func(name string) bool { _, w := sp.withheld[name]; return !w })
	if err != nil {
		return json.RawMessage("[]") // unreadable: serve nothing rather than unchecked tools
	}
	if sameBytes(sp.lastIn, items) {
		sp.lastOut = out
	}
	return out
}

// recompute derives changes and withheld from pinned and current.
func (b *Book) recompute(sp *serverPins) {
	sp.changes = Compare(sp.pinned, sp.current)
	for i := range sp.changes {
		sp.changes[i].Variant = sp.variant
	}
	w := make(map[string]Change)
	for _, c := range sp.changes {
		if c.Kind != KindRemoved {
			w[c.Tool] = c
		}
	}
	sp.withheld = w
	sp.gen++
	sp.lastOut = nil
}

// Invalidate marks server's last list, of every variant, as stale (a
// list_changed arrived): under ModeEnforce the next call lists the tools
// again before it runs.
func (b *Book) Invalidate(name string) {
	sps := b.variantsOf(name)
	if len(sps) == 0 {
		sps = append(sps, b.server(name))
	}
	for _, sp := range sps {
		sp.mu.Lock()
		sp.verified = false
		sp.invalidations++
		sp.mu.Unlock()
	}
}

// Check decides a call of tool on server, whose process is pid, under
// mode: needList reports that the server's tools must be listed (and
// Observed) first; err is a *WithheldError for a withheld tool.
func (b *Book) Check(name string, mode Mode, pid int, tool string) (needList bool, err error) {
	return b.CheckVariant(name, Variant{}, mode, pid, tool)
}

// CheckVariant is Check of a call by a client of server's variant v.
func (b *Book) CheckVariant(name string, v Variant, mode Mode, pid int, tool string) (needList bool, err error) {
	if mode != ModeEnforce {
		return false, nil
	}
	sp := b.serverOf(name, v)
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if !sp.verified || sp.pid != pid || pid == 0 {
		return true, nil
	}
	if c, ok := sp.withheld[tool]; ok {
		return false, &WithheldError{Server: name, Change: c}
	}
	return false, nil
}

// Pending returns server's changes since its last list of each variant
// (nil when none or none seen), by variant then tool, and whether a list
// was seen.
func (b *Book) Pending(name string) ([]Change, bool) {
	var out []Change
	listed := false
	for _, sp := range b.variantsOf(name) {
		sp.mu.Lock()
		out = append(out, sp.changes...)
		listed = listed || sp.current != nil
		sp.mu.Unlock()
	}
	return out, listed
}

// PendingCount is len(Pending(name)) without the copy.
func (b *Book) PendingCount(name string) int {
	n := 0
	for _, sp := range b.variantsOf(name) {
		sp.mu.Lock()
		n += len(sp.changes)
		sp.mu.Unlock()
	}
	return n
}

// Approve accepts the current definitions of the named tools of server
// (every pending change when tools is empty) and saves them: a changed or
// added tool is pinned as it is now, a removed one is forgotten. It
// returns the tools approved; naming a tool with no pending change is an
// error. Approve needs a list seen since mcpd started (ok false: none).
func (b *Book) Approve(name string, tools []string) ([]string, error) {
	pending, listed := b.Pending(name)
	if !listed {
		return nil, fmt.Errorf("approve tools of %q: no tools list seen yet", name)
	}
	for _, t := range tools {
		if !slices.ContainsFunc(pending, func(c Change) bool { return c.Tool == t }) {
			return nil, fmt.Errorf("approve tools of %q: tool %q has no pending change", name, t)
		}
	}
	var approved []string
	for _, sp := range b.variantsOf(name) {
		got, err := b.approveVariant(name, sp, tools)
		approved = append(approved, got...)
		if err != nil {
			return approved, err
		}
	}
	slices.Sort(approved)
	return slices.Compact(approved), nil
}

// approveVariant is Approve of one variant: the named tools that have a
// pending change there (every pending change when none is named).
func (b *Book) approveVariant(name string, sp *serverPins, tools []string) ([]string, error) {
	sp.io.Lock() // pinned stays as read until the new pins are saved
	defer sp.io.Unlock()
	sp.mu.Lock()
	if sp.current == nil {
		sp.mu.Unlock()
		return nil, nil
	}
	if len(tools) > 0 {
		tools = slices.DeleteFunc(slices.Clone(tools), func(t string) bool {
			return !slices.ContainsFunc(sp.changes, func(c Change) bool { return c.Tool == t })
		})
		if len(tools) == 0 {
			sp.mu.Unlock()
			return nil, nil
		}
	}
	next, approved, err := b.approvalLocked(name, sp, tools)
	sp.mu.Unlock()
	if err != nil || len(approved) == 0 {
		return nil, err
	}
	err = b.savePins(name, sp, next, func() {
		b.recompute(sp)
		sp.reported = changeKey(sp.changes)
	})
	if err != nil {
		return nil, err
	}
	return approved, nil
}

// approvalLocked returns the pins that approving tools (every pending
// change when empty) makes, and the tools approved. sp.mu must be held.
func (b *Book) approvalLocked(name string, sp *serverPins, tools []string) (next Tools, approved []string, err error) {
	if sp.current == nil {
		return nil, nil, fmt.Errorf("approve tools of %q: no tools list seen yet", name)
	}
	byTool := make(map[string]Change, len(sp.changes))
	for _, c := range sp.changes {
		byTool[c.Tool] = c
	}
	if len(tools) == 0 {
		for _, c := range sp.changes {
			tools = append(tools, c.Tool)
		}
	}
	next = make(Tools, len(sp.pinned))
	for k, v := range sp.pinned {
		next[k] = v
	}
	for _, t := range tools {
		c, ok := byTool[t]
		if !ok {
			return nil, nil, fmt.Errorf("approve tools of %q: tool %q has no pending change", name, t)
		}
		if c.Kind == KindRemoved {
			delete(next, t)
		} else {
			next[t] = c.Current
		}
		approved = append(approved, t)
	}
	return next, approved, nil
}

// FilterPage removes from a tools/list result (one page) the tools that are
// withheld or not pinned with the same definition, under ModeEnforce. A
// server with nothing pinned yet is served as it is: its first full list
// pins it.
func (b *Book) FilterPage(name string, mode Mode, result json.RawMessage) (json.RawMessage, error) {
	return b.FilterPageVariant(name, Variant{}, mode, result)
}

// FilterPageVariant is FilterPage of a page listed for server's variant v.
func (b *Book) FilterPageVariant(name string, v Variant, mode Mode, result json.RawMessage) (json.RawMessage, error) {
	if mode != ModeEnforce {
		return result, nil
	}
	sp := b.serverOf(name, v)
	if err := b.load(name, sp); err != nil {
		return nil, err
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.pinned == nil {
		return result, nil
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(result, &members); err != nil {
		return nil, fmt.Errorf("tools/list result: %w", err)
	}
	tools, ok := members["tools"]
	if !ok {
		return result, nil
	}
	kept, err := filterItemsDef(tools, func(n string, d Definition) bool {
		p, ok := sp.pinned[n]
		return ok && p.Digest == d.Digest
	})
	if err != nil {
		return nil, err
	}
	members["tools"] = kept
	return json.Marshal(members)
}

// filterItems returns the items of a JSON array whose tool name keep accepts.
func filterItems(items json.RawMessage, keep func(name string) bool) (json.RawMessage, error) {
	return filterItemsDef(items, func(n string, _ Definition) bool { return keep(n) })
}

func filterItemsDef(items json.RawMessage, keep func(name string, d Definition) bool) (json.RawMessage, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal(items, &raw); err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, 0, len(raw))
	for _, it := range raw {
		n, d, err := ParseTool(it)
		if err == nil && keep(n, d) {
			out = append(out, it)
		}
	}
	return json.Marshal(out)
}

// changeKey identifies a set of changes, to report each set once.
func changeKey(cs []Change) string {
	var sb strings.Builder
	for _, c := range cs {
		sb.WriteString(c.Tool + "\x00" + string(c.Kind) + "\x00" + c.Current.Digest + "\n")
	}
	return sb.String()
}

// sameBytes reports whether a and b are the same slice (not just equal
// bytes): a cache hit hands out the very bytes it stored.
func sameBytes(a, b []byte) bool {
	return len(a) == len(b) && len(a) > 0 && unsafe.SliceData(a) == unsafe.SliceData(b)
}
