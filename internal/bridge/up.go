package bridge

import (
	"context"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// upState is whether the bridge has reached mcpd and learned its servers.
// A bridge started while mcpd is down does not exit: it answers
// initialize, server/discover and ping from what it knows, answers other
// requests with a clear JSON-RPC error, and keeps trying to reach mcpd;
// once it has, it tells the host its lists changed. Guarded by bridge.mu,
// except up, which is closed once.
type upState struct {
	up       chan struct{} // closed once setup succeeded
	err      error         // the last setup failure
	tried    chan struct{} // closed, and replaced, after each failed attempt
	kick     chan struct{} // buffered 1: attempt now
	resolved bool          // the server names are known (setup goroutine only)
	// degraded: the host was answered initialize or server/discover, or
	// opened a listen, before setup succeeded, with the default
	// capabilities; it is told the lists changed once the bridge is up.
	degraded bool
}

func newUpState() upState {
	return upState{up: make(chan struct{}), tried: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// isUp reports whether setup succeeded.
func (b *bridge) isUp() bool {
	select {
	case <-b.upst.up:
		return true
	default:
		return false
	}
}

// mcpdDown reports whether a setup failure means mcpd is not reachable.
func (b *bridge) mcpdDown() bool { return b.be.Down() }

// setupLoop retries setup until it succeeds or ctx ends, at once when a
// request kicks it, else with a delay doubling from retryMin to
// retryMax: "reconnect when mcpd is back".
func (b *bridge) setupLoop(ctx context.Context, names []string, all bool) {
	delay := retryMin
	for {
		err := b.setup(ctx, names, all)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			close(b.upst.up)
			b.announceUp()
			return
		}
		if b.mcpdDown() {
			err = b.be.NotRunning()
		}
		b.mu.Lock()
		b.upst.err = err
		close(b.upst.tried)
		b.upst.tried = make(chan struct{})
		b.mu.Unlock()
		if b.starting() {
			delay = min(delay, startRetry) // requests wait for this attempt
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
		case <-t.C:
			delay = min(delay*2, retryMax)
		case <-b.upst.kick:
			delay = retryMin
		}
		t.Stop()
	}
}

// upErr is why mcpd could not be reached, nil before the first try.
func (b *bridge) upErr() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.upst.err
}

// waitUp returns nil once the bridge is up. Before that it makes the setup
// loop try at once and waits for that attempt: a request right after mcpd
// came back succeeds, one while it is down gets the reason.
func (b *bridge) waitUp(ctx context.Context) *jsonrpc.Error {
	if b.isUp() || b.waitStart(ctx) {
		return nil
	}
	b.mu.Lock()
	tried := b.upst.tried
	b.mu.Unlock()
	select {
	case b.upst.kick <- struct{}{}:
	default:
	}
	select {
	case <-b.upst.up:
		return nil
	case <-tried:
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", b.upErr().Error())
	case <-ctx.Done():
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "request cancelled")
	case <-b.ctx.Done():
		// The host closed stdin before mcpd was reached: why not, when
		// known, rather than that the host left.
		if err := b.upErr(); err != nil {
			return jsonrpc.Errorf(jsonrpc.CodeInternalError, "%s", err.Error())
		}
		return jsonrpc.Errorf(jsonrpc.CodeInternalError, "the client closed the connection")
	}
}

// startRetry bounds the setup loop's delay while requests wait for mcpd
// (Options.StartWait).
const startRetry = 250 * time.Millisecond

// starting reports whether the bridge is in its first Options.StartWait,
// when requests wait for mcpd.
func (b *bridge) starting() bool {
	return time.Since(b.started) < b.opts.StartWait
}

// waitStart waits until the bridge is up, for as long as it is starting
// (Options.StartWait), or until ctx or the bridge ends. It reports whether
// the bridge is up.
func (b *bridge) waitStart(ctx context.Context) bool {
	left := b.opts.StartWait - time.Since(b.started)
	if left <= 0 {
		return false
	}
	t := time.NewTimer(left)
	defer t.Stop()
	select {
	case <-b.upst.up:
		return true
	case <-t.C:
	case <-ctx.Done():
	case <-b.ctx.Done():
	}
	return false
}

// defaultCapabilities are declared to a host before the bridge could learn
// the servers' own: everything a server may offer, with list changes, which
// the bridge announces once it is up.
func defaultCapabilities() map[string]any {
	return map[string]any{
		"tools":     map[string]any{"listChanged": true},
		"prompts":   map[string]any{"listChanged": true},
		"resources": map[string]any{"listChanged": true, "subscribe": true},
	}
}

// announceUp tells a host that was served before the bridge was up that
// every list may have changed: a legacy host untagged, each modern listen
// for what it asked.
func (b *bridge) announceUp() {
	b.mu.Lock()
	degraded := b.upst.degraded
	b.mu.Unlock()
	if !degraded {
		return
	}
	b.syncURIs(b.ctx) // URIs of listens opened meanwhile
	b.announceLists(true)
}
