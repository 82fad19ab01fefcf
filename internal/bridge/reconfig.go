package bridge

import (
	"context"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/profile"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
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
// differ from those the bridge serves, which it cannot change.
func (b *bridge) reprofile(info *mcpdv1.ProfileInfo) (serversChanged bool) {
	mode := prefixMode(b.opts.Prefix, info)
	b.mu.Lock()
	serversChanged = !slices.Equal(b.profileInfo.GetServers(), info.GetServers())
	changed := b.prefix != mode
	b.prefix, b.profileInfo = mode, info
	if changed {
		// Exposed names route anew from the next list.
		clear(b.routes)
		b.toolsListed = false
	}
	aggr := b.aggr
	b.mu.Unlock()
	if changed && aggr {
		b.announceLists(false)
	}
	return serversChanged
}

// profileLookup is what mcpd says of a profile after a reload.
type profileLookup struct {
	info *mcpdv1.ProfileInfo
	gone bool // mcpd has no such profile
	err  bool // mcpd could not be asked: leave the profile's bridges be
}

// lookupProfile asks mcpd about profile name.
func (h *HTTPHandler) lookupProfile(ctx context.Context, name string) profileLookup {
	resp, err := h.be.ListServers(WithProfile(ctx, name), &mcpdv1.ListServersRequest{})
	switch {
	case status.Code(err) == codes.NotFound:
		return profileLookup{gone: true}
	case err != nil:
		return profileLookup{err: true}
	}
	return profileLookup{info: resp.GetProfile()}
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
	shared := map[endpoint]*sharedBridge{}
	for ep, sb := range h.shared {
		if ep.profile != "" {
			shared[ep] = sb
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
	for ep, sb := range shared {
		h.reconfigureShared(ep, sb, lookup(ep.profile))
	}
}

// reconfigureShared applies l to the shared bridge sb of endpoint ep.
func (h *HTTPHandler) reconfigureShared(ep endpoint, sb *sharedBridge, l profileLookup) {
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
	mine := h.shared[ep] == sb
	if mine {
		delete(h.shared, ep)
	}
	h.mu.Unlock()
	if !mine {
		return
	}
	if l.gone {
		sb.end()
		return
	}
	h.wg.Go(func() { // retire: the requests in progress finish first
		sb.serve.close()
		sb.stop()
		sb.b.wg.Wait()
	})
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
