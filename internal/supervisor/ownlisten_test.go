package supervisor

import (
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/cache"
)

// mcpd's own listen keeps a modern child's lists cached without any app,
// and it is not demand: an idle timeout still stops the child.
func TestOwnListenIsNotDemand(t *testing.T) {
	clk := newFakeClock()
	spec := withTTL(fakeSpec("m", "modern"), "0")
	spec.IdleTimeout = time.Minute
	h := newHarness(t, Options{Specs: []Spec{spec}}, clk.install)

	h.mustEcho("m", "start")
	first := h.waitState("m", StateReady)
	waitFor(t, "tools/list kept under mcpd's listen", func() bool {
		_, src := h.list("m", "tools/list")
		return src == cache.SourceHit
	})
	if n := h.upstream("m", "subscriptions/listen"); n != 1 {
		t.Fatalf("the child saw %d subscriptions/listen, want 1", n)
	}
	if streams := h.s.Subscriptions().Streams(); len(streams) != 0 {
		t.Fatalf("mcpd's listen shows as streams %v", streams)
	}
	waitFor(t, "the idle timer", func() bool { return clk.pending() == 1 })
	clk.fireNext(t)
	h.waitState("m", StateStopped)
	waitFor(t, "idle child reaped", func() bool { return pidGone(first.Pid) })
	// A pending acquire (demand) would have started it again in the same
	// step of the loop that stopped it.
	if st := h.status("m"); st.State != StateStopped || st.Pid != 0 {
		t.Fatalf("after the idle stop: %s pid %d (events %v), want it stopped", st.State, st.Pid, h.kinds("m"))
	}
}
