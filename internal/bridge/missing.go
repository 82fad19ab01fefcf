package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// A served server may be down (crash-looping, failed, stopped by the
// operator, removed from the config) when the bridge starts or at any time
// after. The bridge goes on serving the others: a server that cannot
// answer a list is left out of the aggregate list, and the host is told
// which server is missing, in a notifications/message at level warning
// (and on stderr, which hosts keep in their logs). The bridge watches the
// servers' lifecycle on its Subscribe stream; when a missing server is
// ready again, it is described afresh and the host is told its tools,
// prompts and resources lists changed.

// bridgeLogger is the logger of the bridge's own log messages.
const bridgeLogger = "mcpdctl bridge"

// downStates are the lifecycle states in which a server stays down until
// something starts it (mcpd's restarting and exited are transient).
var downStates = []string{"crashloop", "failed", "stopped", "removed"}

// serverDown records that server cannot serve now, for reason, which
// names the server (downReason); the first time, it warns on stderr and
// tells the host.
func (b *bridge) serverDown(server, reason string) {
	b.mu.Lock()
	_, known := b.missing[server]
	b.missing[server] = reason
	b.mu.Unlock()
	if known {
		return
	}
	b.tell(missingMessage(reason))
}

// downReason is why server is down, said as naming it: why is mcpd's word
// (an event's error, a state), which may or may not name it.
func downReason(server, why string) string {
	return fmt.Sprintf("server %q is unavailable (%s)", server, why)
}

// failedReason is why server failed a call, err, naming it once
// (unavailableText).
func failedReason(server string, err error) string {
	return unavailableText(server, serviceError(err))
}

// tell warns the operator (stderr) and the host of msg.
func (b *bridge) tell(msg string) {
	b.opts.Warnf("bridge: %s", msg)
	if b.hostWantsWarnings() {
		b.logToHost("warning", msg)
	}
}

// warnOnce tells the operator and the host msg, the first time only.
func (b *bridge) warnOnce(msg string) {
	b.mu.Lock()
	told := b.warned[msg]
	if b.warned == nil {
		b.warned = map[string]bool{}
	}
	b.warned[msg] = true
	b.mu.Unlock()
	if !told {
		b.tell(msg)
	}
}

// serverUp records that server serves again; it reports whether it was
// missing.
func (b *bridge) serverUp(server string) bool {
	b.mu.Lock()
	_, was := b.missing[server]
	delete(b.missing, server)
	b.mu.Unlock()
	if was {
		b.opts.Warnf("bridge: server %q is back", server)
	}
	return was
}

// missingMessage is the warning for a missing server, for reason, which
// names it.
func missingMessage(reason string) string {
	return reason + "; its tools, prompts and resources are missing until it runs again"
}

// missingMessages are the warnings for every missing server, in the
// servers' order.
func (b *bridge) missingMessages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, n := range b.serverNames() {
		if reason, ok := b.missing[n]; ok {
			out = append(out, missingMessage(reason))
		}
	}
	return out
}

// hostWantsWarnings reports whether a legacy host that completed the
// handshake takes the bridge's warnings outside any request: it was
// declared the logging capability and did not set a level above warning.
// A modern host gets log messages only for its requests that ask for them
// (warnRequest).
func (b *bridge) hostWantsWarnings() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, logging := b.capsMapLocked()["logging"]
	return b.hostReady && logging && levelAllows(b.logLevel, "warning")
}

// levelAllows reports whether a message at level passes the minimum level
// set ("" when none was set: the server may choose what to send).
func levelAllows(set, level string) bool {
	return set == "" || slices.Index(logLevels, level) >= slices.Index(logLevels, set)
}

func (b *bridge) logToHost(level, msg string) { b.logToHostIn(nil, level, msg) }

// logToHostIn sends msg to the host in the scope of its request id (nil:
// outside any).
func (b *bridge) logToHostIn(scope json.RawMessage, level, msg string) {
	b.notify(scope, "notifications/message", map[string]any{"level": level, "logger": bridgeLogger, "data": msg})
}

// hostOpened is a legacy host's notifications/initialized: the warnings
// about servers missing since before it are sent now.
func (b *bridge) hostOpened() {
	b.mu.Lock()
	b.hostReady = b.initialized
	b.mu.Unlock()
	if !b.hostWantsWarnings() {
		return
	}
	for _, msg := range b.missingMessages() {
		b.logToHost("warning", msg)
	}
}

// warnRequest sends a modern host's list request that asked for log
// messages at warning or below the warnings about missing servers and
// notes (about servers too slow for it), in its scope before its answer
// (messages "only for that request").
func (b *bridge) warnRequest(r *hostReq, notes []string) {
	var level string
	if !r.modern || json.Unmarshal(r.meta[jsonrpc.MetaLogLevel], &level) != nil || !slices.Contains(logLevels, level) ||
		!levelAllows(level, "warning") {
		return
	}
	for _, msg := range append(b.missingMessages(), notes...) {
		b.logToHostIn(r.id, "warning", msg)
	}
}

// serverState handles a lifecycle event of a served server: a server that
// stays down is missing; one that is ready and was missing, or never
// described, is described and the host told its lists changed.
func (b *bridge) serverState(ctx context.Context, ev *service.SubscriptionEvent) {
	n := ev.Server
	if !slices.Contains(b.serverNames(), n) {
		return
	}
	switch {
	case slices.Contains(downStates, ev.State):
		why := ev.Error
		if why == "" {
			why = ev.State
		}
		b.serverDown(n, downReason(n, why))
		if b.aggr {
			b.announceLists(false) // its items are gone from the aggregate lists
		}
		if ev.State == "removed" {
			b.refreshProfileSoon() // a bridge of a whole profile serves what it has now
		}
	case ev.State == "ready":
		b.mu.Lock()
		_, missing := b.missing[n]
		described := b.info[n] != nil
		b.mu.Unlock()
		if !missing && described {
			// A restart: mcpd tells of list changes itself; what the
			// server declares is learned again (mayOffer).
			b.redescribe(ctx, n)
			return
		}
		if err := b.describe(ctx, false); err != nil {
			return
		}
		b.serverUp(n)
		b.changed(false, "", n, b.eventTime(ev)) // a host list given after it was ready holds its items
	}
}

// redescribe learns again what server declares, from mcpd's status.
func (b *bridge) redescribe(ctx context.Context, server string) {
	st, err := b.be.ListServers(ctx)
	if err != nil {
		return
	}
	for i := range st.Servers {
		if s := &st.Servers[i]; s.Name == server && len(s.Capabilities) > 0 {
			b.mu.Lock()
			b.info[server] = s
			b.mu.Unlock()
		}
	}
}

// ackServers records the servers the Subscribe stream's acknowledgement
// says cannot serve now.
func (b *bridge) ackServers(ack *service.SubscriptionAck) {
	for _, s := range ack.Servers {
		if s.Error != "" && slices.Contains(b.serverNames(), s.Server) {
			b.serverDown(s.Server, downReason(s.Server, s.Error))
		}
	}
}

// announceLists tells the host that its tools, prompts and resources lists
// may have changed: a legacy host untagged for the kinds it was declared
// list changes of (every kind with all: it was declared the defaults),
// each modern listen for what it asked; an aggregate's host within
// listChangedWindow (changed).
func (b *bridge) announceLists(all bool) { b.changed(all, "", "", time.Now()) }

// announceNow tells the host at once that its lists of the kinds in
// legacy (to a legacy host) and listens (to each modern listen) may have
// changed.
func (b *bridge) announceNow(all bool, legacy, listens map[string]bool) {
	b.mu.Lock()
	ready := b.hostReady // "not before the initialized notification"
	caps := b.capsLocked()
	var ls []*listenSub
	for _, l := range b.subs.listens {
		ls = append(ls, l)
	}
	b.mu.Unlock()
	kinds := []struct {
		kind, method string
		declared     bool
		on           func(*listenSub) bool
	}{
		{"tools", "notifications/tools/list_changed", caps.tools, func(l *listenSub) bool { return l.tools }},
		{"prompts", "notifications/prompts/list_changed", caps.prompts, func(l *listenSub) bool { return l.prompts }},
		{"resources", "notifications/resources/list_changed", caps.resources, func(l *listenSub) bool { return l.resources }},
	}
	for _, k := range kinds {
		if ready && (k.declared || all) && (legacy[k.kind] || all) {
			b.notify(nil, k.method, map[string]any{})
		}
		if !listens[k.kind] {
			continue
		}
		for _, l := range ls {
			if k.on(l) {
				b.notify(l.id, k.method, map[string]any{"_meta": map[string]json.RawMessage{jsonrpc.MetaSubscriptionID: l.id}})
			}
		}
	}
}
