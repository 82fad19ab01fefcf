package supervisor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// loopStarted reports whether the named server's loop goroutine was started.
func (h *harness) loopStarted(name string) bool {
	h.t.Helper()
	sv, err := h.s.lookup(name)
	if err != nil {
		h.t.Fatal(err)
	}
	return sv.loopStarted.Load()
}

// Run starts the loops of the servers that have work at once (autostart,
// an invalid config) and leaves the lazy ones dormant until their first
// command, which then behaves as with a loop that ran all along.
func TestLazyServerLoopStartsOnFirstCommand(t *testing.T) {
	auto := fakeSpec("auto", "dual")
	auto.Autostart = true
	invalid := fakeSpec("invalid", "dual")
	invalid.Invalid = "args[0]: ${NOPE} is not set"
	specs := []Spec{auto, invalid, fakeSpec("lazy", "dual")}
	for i := range 50 {
		specs = append(specs, fakeSpec(fmt.Sprintf("idle%02d", i), "dual"))
	}
	h := newHarness(t, Options{Specs: specs}, nil)
	h.waitState("auto", StateReady)
	h.waitState("invalid", StateFailed)
	if !h.loopStarted("auto") || !h.loopStarted("invalid") {
		t.Fatal("the autostart and the invalid server have no loop")
	}
	for _, sp := range specs[2:] {
		if h.loopStarted(sp.Name) {
			t.Fatalf("lazy server %q has a loop before any command", sp.Name)
		}
		if st := h.status(sp.Name); st.State != StateStopped {
			t.Fatalf("lazy server %q is %s, want stopped", sp.Name, st.State)
		}
	}
	h.mustEcho("lazy", "woken")
	if !h.loopStarted("lazy") || h.loopStarted("idle00") {
		t.Fatal("a call started the wrong loops")
	}
	// Commands other than calls wake a dormant loop too.
	if _, err := h.s.Stop(t.Context(), "idle01"); err != nil {
		t.Fatalf("Stop of a dormant server: %v", err)
	}
	if st := h.status("idle01"); !st.ExplicitlyStopped {
		t.Fatalf("dormant server after Stop: %+v", st)
	}
	if _, err := h.s.Start(t.Context(), "idle02"); err != nil {
		t.Fatalf("Start of a dormant server: %v", err)
	}
	h.waitState("idle02", StateReady)
}

// A call made before Run waits, and is served once Run starts, also when
// its server is lazy.
func TestCallBeforeRunOnLazyServer(t *testing.T) {
	s := New(Options{Specs: []Spec{fakeSpec("lazy", "dual"), fakeSpec("other", "dual")}})
	sv, _ := s.lookup("lazy")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	got := make(chan error, 1)
	go func() {
		_, err := s.Call(ctx, "lazy", toolCall("echo", map[string]any{"message": "early"}), CallOptions{})
		got <- err
	}()
	waitFor(t, "the early call to wait for the loop", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return sv.loopWanted
	})
	runCtx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	if err := <-got; err != nil {
		t.Fatalf("call made before Run: %v", err)
	}
	if other, _ := s.lookup("other"); other.loopStarted.Load() {
		t.Error("the other lazy server got a loop")
	}
}

// A dormant server removed by a reload ends at once: its log followers
// end, and calls find no such server.
func TestApplyRemovesDormantServer(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("keep", "dual"), fakeSpec("gone", "dual")}}, nil)
	_, lines, cancel, err := h.s.FollowLogs("gone", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	res := mustApply(t, h.s, fakeSpec("keep", "dual"))
	if !cmp.Equal(res.Removed, []string{"gone"}) || !cmp.Equal(res.Unchanged, []string{"keep"}) {
		t.Fatalf("ApplyResult = %+v", res)
	}
	waitClosed(t, lines, "the follower of a removed dormant server")
	if _, err := h.echo("gone", "x"); !errors.Is(err, ErrUnknownServer) {
		t.Fatalf("call on the removed server: %v, want ErrUnknownServer", err)
	}
	h.mustEcho("keep", "still here")
}

// When the supervisor stops, the log followers of dormant servers end too.
func TestStopEndsFollowersOfDormantServers(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("lazy", "dual")}}, nil)
	_, lines, cancel, err := h.s.FollowLogs("lazy", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	h.stop()
	waitClosed(t, lines, "the follower of a dormant server after Run returned")
	if _, err := h.echo("lazy", "x"); err == nil {
		t.Fatal("a call after Run returned succeeded")
	}
}

// waitClosed waits until ch is closed, draining it.
func waitClosed[T any](t *testing.T, ch <-chan T, what string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("%s is still open", what)
		}
	}
}
