// The last list of each method, kept to answer the next one as it was:
// mcpd's cache gives a list the same bytes until a server's list changes,
// and a host lists far more often than its servers change.

package bridge

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/profile"
)

// listMemo is the last list of one method a bridge made with no server
// left out as too slow, and whose routes are the bridge's now (setRoutes
// keeps it; whatever changes the routes otherwise forgets it). A list made
// of the same items, byte for byte, under the same prefix mode and
// leniency is the same list: it is not named, routed or written again.
type listMemo struct {
	got     []serverItems // what l was made of
	mode    profile.Prefix
	lenient bool
	l       *listing
	// result is the last result written from l's items, for a host of the
	// era modern says, with info as its serverInfo; nil until one is.
	result json.RawMessage
	modern bool
	info   json.RawMessage
}

// madeOf reports whether m's list was made of got under mode and lenient.
func (m *listMemo) madeOf(got []serverItems, mode profile.Prefix, lenient bool) bool {
	return m != nil && m.mode == mode && m.lenient == lenient &&
		slices.EqualFunc(m.got, got, func(a, b serverItems) bool {
			return a.server == b.server && bytes.Equal(a.items, b.items) // the same bytes compare at once
		})
}

// lastListing is the listing of method last made of got under mode and
// lenient, nil when the last was made of anything else.
func (b *bridge) lastListing(method string, got []serverItems, mode profile.Prefix, lenient bool) *listing {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.lists[method]; m.madeOf(got, mode, lenient) {
		return m.l
	}
	return nil
}

// rememberLocked keeps l, made of got under mode and lenient, as the last
// list of its method, whose routes setRoutes has just set; b.mu is held.
func (b *bridge) rememberLocked(l *listing, got []serverItems, mode profile.Prefix) {
	if b.lists == nil {
		b.lists = map[string]*listMemo{}
	}
	b.lists[l.method] = &listMemo{got: got, mode: mode, lenient: l.lenient, l: l}
}

// lastResult is the result last written from items, when they are the
// items of method's last listing and the host's era and serverInfo are
// those it was written for.
func (b *bridge) lastResult(method string, items []json.RawMessage, modern bool, info json.RawMessage) (json.RawMessage, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m := b.lists[method]
	if m == nil || m.result == nil || !sameSlice(m.l.items, items) || m.modern != modern || !bytes.Equal(m.info, info) {
		return nil, false
	}
	return m.result, true
}

// keepResult keeps res, written from items for a host of that era with
// info, when items are those of method's last listing.
func (b *bridge) keepResult(method string, items []json.RawMessage, modern bool, info, res json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := b.lists[method]; m != nil && sameSlice(m.l.items, items) {
		m.result, m.modern, m.info = res, modern, info
	}
}

// sameSlice reports whether a and b are one slice: the same elements of
// the same array.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}
