package bridge

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcpd-dev/mcpd/internal/profile"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// prefixMode is how the bridge prefixes names when it serves several
// servers; a reload of mcpd's config may change it (reprofile).
func (b *bridge) prefixMode() profile.Prefix {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.prefix
}

// reprofile applies info, the served profile as mcpd now describes it:
// a changed prefix mode names what is listed from now on, and the host is
// told that its lists changed. It reports whether the profile's servers
// differ from those it last described (a shared bridge of the HTTP face
// is replaced then; a stdio bridge of the whole profile follows them).
func (b *bridge) reprofile(info *service.Profile) (serversChanged bool) {
	mode := prefixMode(b.opts.Prefix, info)
	b.mu.Lock()
	serversChanged = !slices.Equal(profileServers(b.profileInfo), profileServers(info))
	changed := b.prefix != mode
	b.prefix, b.profileInfo = mode, info
	if changed {
		// Exposed names route anew from the next list.
		clear(b.routes)
		clear(b.lists)
		b.toolsListed = false
	}
	aggr := b.aggr
	b.mu.Unlock()
	if changed && aggr {
		b.announceLists(false)
	}
	b.forgetRefused() // the profile's resource rules may show them now
	return serversChanged
}

// isListChange reports whether k is a list-changed event kind.
func isListChange(k service.SubscriptionKind) bool {
	switch k {
	case service.ToolsListChanged, service.PromptsListChanged, service.ResourcesListChanged:
		return true
	}
	return false
}

// profileServers are the servers of p, none for nil.
func profileServers(p *service.Profile) []string {
	if p == nil {
		return nil
	}
	return p.Servers
}

// refreshState coalesces the profile refreshes of a burst of list
// changes (a reload sends one per server and kind); guarded by bridge.mu.
type refreshState struct {
	running bool // a refresh goroutine runs
	again   bool // another was asked for meanwhile: it runs once more
	// after are the profile's list changes to tell once the refresh has
	// applied the profile (refreshProfileThen).
	after []*service.SubscriptionEvent
}

// refreshTimeout bounds one refresh's question to mcpd.
const refreshTimeout = 10 * time.Second

// refreshProfileSoon has the profile refreshed on a goroutine of the
// bridge's, once more after the one running if there is one: the event
// loop that asks goes on delivering meanwhile.
func (b *bridge) refreshProfileSoon() {
	if b.opts.Profile == "" || b.opts.byHandler {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refresh.running {
		b.refresh.again = true
		return
	}
	b.refresh.running = true
	b.wg.Go(func() {
		for {
			b.refreshProfile(b.ctx)
			b.mu.Lock()
			again := b.refresh.again
			b.refresh.again, b.refresh.running = false, again
			var after []*service.SubscriptionEvent
			if !again {
				after, b.refresh.after = b.refresh.after, nil
			}
			b.mu.Unlock()
			for _, ev := range after {
				b.deliver(ev)
			}
			if !again {
				return
			}
		}
	})
}

// refreshProfileThen has the profile refreshed, as a list change ev that
// mcpd made up for the profile says (a reload changed it), and tells ev
// once the profile is applied: a bridge of the whole profile that gains
// or loses servers then tells the host of both at once, not of the
// profile's change and then of its servers'.
func (b *bridge) refreshProfileThen(ev *service.SubscriptionEvent) {
	if b.opts.Profile == "" || b.opts.byHandler {
		b.deliver(ev)
		return
	}
	b.mu.Lock()
	b.refresh.after = append(b.refresh.after, ev)
	b.mu.Unlock()
	b.refreshProfileSoon()
}

// refreshProfile asks mcpd again about the profile a bridge serves, when
// mcpd said that its lists changed (a reload changes a profile's rules,
// servers or prefix that way) or came back, and applies what it says: a
// new prefix mode names the next lists (and the host is told they
// changed); a bridge of the whole profile serves its servers as they are
// now (followProfile); one of named servers keeps those, and tells the
// operator and host when one of them left the profile. A profile that is
// gone is told too. A bridge of the HTTP face is left to its handler
// (Reconfigure), which replaces or ends it.
func (b *bridge) refreshProfile(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, refreshTimeout)
	defer cancel()
	resp, err := b.be.ListServers(ctx)
	switch {
	case service.CodeOf(err) == service.NotFound:
		b.profileNotice(noticeGone, fmt.Sprintf("profile %q is no longer in mcpd's config: its requests fail until it is back; restart the bridge to serve another", b.opts.Profile))
		return
	case err != nil:
		return // mcpd going away: the stream's end says so
	}
	b.profileNotice(noticeGone, "")
	info := resp.Profile
	b.reprofile(info)
	if len(b.opts.Names) == 0 {
		b.followProfile(resp.Servers)
		return
	}
	b.noticeServers(without(b.serverNames(), profileServers(info)), nil)
}

// followProfile makes a bridge of a whole profile serve the profile's
// enabled servers as mcpd now lists them: a server the profile gained
// joins its lists, events and host requests, one it lost or disabled
// leaves them. The Subscribe stream is reopened for the new servers, and
// the host told its lists changed then; the Host registration is renewed.
// A profile left with no enabled server keeps the servers served, whose
// requests fail until it has one again.
func (b *bridge) followProfile(servers []service.ServerStatus) {
	var now []string
	for _, s := range servers {
		if !s.Disabled {
			now = append(now, s.Name)
		}
	}
	old := b.serverNames()
	if len(now) == 0 {
		b.profileNotice(noticeLeft, fmt.Sprintf("profile %q has no enabled server now: this bridge's requests fail until it has one again", b.opts.Profile))
		b.profileNotice(noticeGained, "")
		return
	}
	left, gained := without(old, now), without(now, old)
	b.noticeServers(left, gained)
	if slices.Equal(now, old) {
		return
	}
	b.nameList.Store(&now)
	b.mu.Lock()
	clear(b.routes) // exposed names route anew from the next list
	clear(b.lists)
	b.toolsListed = false
	for _, n := range left {
		delete(b.info, n)
		delete(b.missing, n)
	}
	for uri, n := range b.uris {
		if slices.Contains(left, n) {
			delete(b.uris, uri) // read from the servers served (methods.go)
		}
	}
	open, id := b.subs.end != nil, b.subs.id
	if b.host.started {
		close(b.host.changed)
		b.host.changed = make(chan struct{})
	}
	b.mu.Unlock()
	// Told now, with the profile's own events of the moment (one
	// notification per kind), not again by the stream reopened for the
	// new servers.
	b.announceLists(false)
	if open {
		// Off the refresh: the list changes it was asked with are told
		// now, with this one, not once the new stream is open.
		b.wg.Go(func() { b.reopenFor(id) })
	}
}

// noticeServers tells the operator and the host which served servers left
// the profile and which it gained.
func (b *bridge) noticeServers(left, gained []string) {
	var leftMsg, gainedMsg string
	if len(left) > 0 {
		leftMsg = fmt.Sprintf("profile %q no longer serves %q: left out of this bridge's lists", b.opts.Profile, left)
	}
	if len(gained) > 0 {
		gainedMsg = fmt.Sprintf("profile %q now also serves %q: added to this bridge's lists", b.opts.Profile, gained)
	}
	b.profileNotice(noticeLeft, leftMsg)
	b.profileNotice(noticeGained, gainedMsg)
}

// without returns the names of a that b lacks, in a's order.
func without(a, b []string) []string {
	var out []string
	for _, n := range a {
		if !slices.Contains(b, n) {
			out = append(out, n)
		}
	}
	return out
}

// The kinds of notice a profile's reload gives (profileNotice).
const (
	noticeGone = iota
	noticeLeft
	noticeGained
	numNotices
)

// profileNotice tells the operator and the host msg when it differs from
// the last notice of its kind; an empty msg says that kind holds no more,
// so that it is told again when it comes back (a profile removed, restored
// and removed again is told twice).
func (b *bridge) profileNotice(kind int, msg string) {
	b.mu.Lock()
	told := b.notices[kind] == msg
	b.notices[kind] = msg
	b.mu.Unlock()
	if !told && msg != "" {
		b.tell(msg)
	}
}

// profileLookup is what mcpd says of a profile after a reload.
type profileLookup struct {
	info *service.Profile
	gone bool // mcpd has no such profile
	err  bool // mcpd could not be asked: leave the profile's bridges be
}

// lookupProfile asks mcpd about profile name.
func (h *HTTPHandler) lookupProfile(ctx context.Context, name string) profileLookup {
	resp, err := h.be.ListServers(WithProfile(ctx, name))
	switch {
	case service.CodeOf(err) == service.NotFound:
		return profileLookup{gone: true}
	case err != nil:
		return profileLookup{err: true}
	}
	return profileLookup{info: resp.Profile}
}

// Reconfigure applies a reload of mcpd's config to what the handler
// serves. Every endpoint is checked again at its next request, so a
// removed profile's or server's answers 404. The sessions and shared
// bridges of a profile that is gone end at once. Those of a profile whose
// prefix mode changed list by the new mode from now on, and their hosts
// are told their lists changed. A shared bridge of a profile whose servers
// changed is replaced for new requests, and ends once the requests it is
// serving are done; a legacy session keeps the servers it started with
// (mcpd's gate applies the profile's rules to every call regardless).
func (h *HTTPHandler) Reconfigure(ctx context.Context) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	clear(h.known)
	var sessions []*session
	for _, s := range h.sessions {
		if s.b.opts.Profile != "" {
			sessions = append(sessions, s)
		}
	}
	shared := map[modernKey]*sharedBridge{}
	for k, sb := range h.shared {
		if k.ep.profile != "" {
			shared[k] = sb
		}
	}
	h.mu.Unlock()
	looked := map[string]profileLookup{}
	lookup := func(name string) profileLookup {
		if l, ok := looked[name]; ok {
			return l
		}
		l := h.lookupProfile(ctx, name)
		looked[name] = l
		return l
	}
	for _, s := range sessions {
		switch l := lookup(s.b.opts.Profile); {
		case l.gone:
			if h.forgetSession(s) {
				s.end()
			}
		case !l.err:
			s.b.reprofile(l.info)
		}
	}
	for k, sb := range shared {
		h.reconfigureShared(k, sb, lookup(k.ep.profile))
	}
}

// reconfigureShared applies l to the shared bridge sb of k.
func (h *HTTPHandler) reconfigureShared(k modernKey, sb *sharedBridge, l profileLookup) {
	select {
	case <-sb.ready:
	default:
		return // still setting up: it reads the new config itself
	}
	if sb.err != nil || l.err {
		return
	}
	if !l.gone && !sb.b.reprofile(l.info) {
		return
	}
	h.mu.Lock()
	mine := h.shared[k] == sb
	if mine {
		delete(h.shared, k)
	}
	h.mu.Unlock()
	if !mine {
		return
	}
	if l.gone {
		sb.end()
		return
	}
	h.wg.Go(sb.retire) // the requests in progress finish first
}

// forgetSession removes s from the handler, reporting whether it was there.
func (h *HTTPHandler) forgetSession(s *session) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sessions[s.id] != s {
		return false
	}
	delete(h.sessions, s.id)
	return true
}
