package supervisor

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestCrashOnStartEntersCrashLoop(t *testing.T) {
	clock := newFakeClock()
	opts := Options{
		Specs:             []Spec{fakeSpec("c", "crashonstart")},
		BackoffMin:        time.Millisecond,
		BackoffMax:        time.Second,
		CrashLoopCooldown: time.Hour,
	}
	h := newHarness(t, opts, func(s *Supervisor) {
		clock.install(s)
		s.bo.rand = func() float64 { return 0.5 } // no jitter
	})

	first := make(chan error, 1)
	go func() { _, err := h.echo("c", "x"); first <- err }()
	var delays []time.Duration
	for range 4 {
		delays = append(delays, clock.fireNext(t))
	}
	err := <-first
	// The first exit restarts at once, later ones back off doubling.
	if want := []time.Duration{0, 1, 2, 4}; !cmp.Equal(delays, scale(want, time.Millisecond)) {
		t.Fatalf("backoff delays %v, want %v", delays, want)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("first call: %v, want ErrUnavailable", err)
	}
	// Even the first caller learns how long the server is held down.
	if !strings.Contains(err.Error(), "held down for 1h0m0s") {
		t.Fatalf("first call: %v; want the hold-down time", err)
	}
	st := h.status("c")
	if st.State != StateCrashLoop || st.Restarts != 4 || st.LastExit != "exit status 3" || st.NextRestartIn != time.Hour {
		t.Fatalf("status: %+v", st)
	}
	// 6 spawns: under auto, the first child's exit right after the probe
	// looks like a legacy server's, so it is respawned into initialize at
	// once (not a crash) before crashing 5 times.
	if got := h.count("c", EventStarted); got != 6 {
		t.Fatalf("%d starts, want 6", got)
	}

	// Calls now fail fast, naming the server, the exit and the stderr.
	_, err = h.echo("c", "x")
	for _, want := range []string{`"c"`, "exit status 3", "fakemcp: crash on start", "mcpdctl restart c"} {
		if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
			t.Fatalf("call in crash loop: %v; want ErrUnavailable containing %q", err, want)
		}
	}
	if got := h.count("c", EventStarted); got != 6 {
		t.Fatalf("a call in crash loop started a child (%d starts)", got)
	}

	// The cooldown passing ends the crash loop; there is no demand, so the
	// server idles until the next call.
	if d := clock.fireNext(t); d != time.Hour {
		t.Fatalf("cooldown timer %v, want 1h", d)
	}
	h.waitState("c", StateStopped)

	// Start clears a crash loop at once (and reports the attempt's failure).
	again := make(chan error, 1)
	go func() {
		_, err := h.s.Call(context.Background(), "c", toolCall("echo", nil), CallOptions{})
		again <- err
	}()
	for range 4 {
		clock.fireNext(t)
	}
	if err := <-again; !errors.Is(err, ErrUnavailable) {
		t.Fatalf("call after the cooldown: %v", err)
	}
	h.waitState("c", StateCrashLoop)
	if got := h.count("c", EventStarted); got != 11 {
		t.Fatalf("%d starts, want 11", got)
	}
	if _, err := h.s.Start(context.Background(), "c"); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("Start: %v, want the crash", err)
	}
	if st := h.status("c"); st.State != StateBackoff {
		t.Fatalf("after Start: state %s, want backoff (one recent exit)", st.State)
	}
}

func scale(ds []time.Duration, unit time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d * unit
	}
	return out
}

func TestHandshakeTimeoutCountsAsCrash(t *testing.T) {
	slow := fakeSpec("slow", "silentprobe")
	slow.DiscoverTimeout = time.Hour
	clock := newFakeClock()
	h := newHarness(t, Options{Specs: []Spec{slow}, HandshakeTimeout: 50 * time.Millisecond}, clock.install)
	st, err := h.s.Start(context.Background(), "slow")
	if err == nil || !strings.Contains(err.Error(), "handshake timed out") {
		t.Fatalf("Start: %v", err)
	}
	if st.State != StateBackoff || h.count("slow", EventExited) != 1 {
		t.Fatalf("after a handshake timeout: %+v", st)
	}
	h.mu.Lock()
	pid := h.events[0].Pid // EventStarted
	h.mu.Unlock()
	if pid == 0 || !pidGone(pid) {
		t.Fatalf("the timed-out child %d was not killed", pid)
	}
}

// Start attempts that fail in a row add up to a crash loop however long
// each takes: a handshake that times out after 30 s never makes 5 exits in
// 60 s (here: no two exits within the window).
func TestFailedStartsInARowEnterCrashLoop(t *testing.T) {
	slow := fakeSpec("slow", "silentprobe")
	slow.DiscoverTimeout = time.Hour
	h := newHarness(t, Options{Specs: []Spec{slow}, HandshakeTimeout: 30 * time.Millisecond,
		BackoffMin: time.Millisecond, BackoffMax: 5 * time.Millisecond,
		CrashLoopWindow: time.Nanosecond, CrashLoopCooldown: time.Hour}, nil)
	// Each call waits through one start, and is told why it failed.
	_, err := h.echo("slow", "x")
	if want := `server "slow" is not ready: start "slow": handshake timed out after 30ms`; !errors.Is(err, ErrUnavailable) || err.Error() != want {
		t.Fatalf("first call: %v; want the handshake timeout", err)
	}
	for i := 0; i < 10 && !strings.Contains(err.Error(), "crash-looping"); i++ {
		_, err = h.echo("slow", "x")
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `crash-looping (5 starts failed in a row, the last: start "slow": handshake timed out`) {
		t.Fatalf("call: %v; want a crash loop of 5 failed starts", err)
	}
	if st := h.status("slow"); st.State != StateCrashLoop || h.count("slow", EventExited) != 5 {
		t.Fatalf("status %+v after %d exits", st, h.count("slow", EventExited))
	}
}

// A server that never answers initialize fails its start within the
// server's own timeouts (probe + request), not the supervisor's longer
// HandshakeTimeout.
func TestStartBoundedByServerTimeouts(t *testing.T) {
	slow := fakeSpec("slow", "legacy,hanginit")
	slow.DiscoverTimeout = 100 * time.Millisecond
	slow.RequestTimeout = 200 * time.Millisecond
	h := newHarness(t, Options{Specs: []Spec{slow}, HandshakeTimeout: time.Hour}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := h.s.Start(ctx, "slow")
	if err == nil || !strings.Contains(err.Error(), "handshake timed out after 300ms") {
		t.Fatalf("Start: %v; want a handshake timeout after 300ms", err)
	}
}

// A modern-only server that crashed on start looked like a legacy server
// exiting right after the probe, so legacy was remembered. Once it starts
// again it comes up modern: its failed initialize makes mcpd probe again,
// and an operator's restart of the crash-looping server negotiates afresh.
func TestLegacyVerdictFromACrashIsNotForever(t *testing.T) {
	for _, how := range []string{"after the cooldown", "operator restart"} {
		t.Run(how, func(t *testing.T) {
			flag := filepath.Join(t.TempDir(), "crash")
			if err := os.WriteFile(flag, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			spec := fakeSpec("m", "modern")
			spec.Env[fakemcp.EnvCrashWhile] = flag
			h := newHarness(t, Options{Specs: []Spec{spec}, CrashLoopMax: 2,
				BackoffMin: time.Millisecond, BackoffMax: time.Millisecond, CrashLoopCooldown: 200 * time.Millisecond}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if _, err := h.s.Call(ctx, "m", toolCall("echo", nil), CallOptions{}); err == nil {
				t.Fatal("a call to a server crashing on start succeeded")
			}
			h.waitState("m", StateCrashLoop)
			if err := os.Remove(flag); err != nil {
				t.Fatal(err)
			}
			if how == "operator restart" {
				if _, err := h.s.Restart(ctx, "m"); err != nil {
					t.Fatalf("restart: %v", err)
				}
			} else {
				h.waitState("m", StateStopped)
				if _, err := h.echo("m", "hi"); err != nil {
					t.Fatalf("call after the cooldown: %v", err)
				}
			}
			if st := h.status("m"); st.State != StateReady || st.Era != session.EraModern {
				t.Fatalf("state %s era %q, want ready and modern", st.State, st.Era)
			}
		})
	}
}

// A restart of a server stuck in its handshake ends that start (its
// process is reaped) and begins another at once.
func TestRestartDuringStuckStart(t *testing.T) {
	stuck := fakeSpec("stuck", "legacy,hanginit")
	h := newHarness(t, Options{Specs: []Spec{stuck}, HandshakeTimeout: time.Hour}, nil)
	started := make(chan error, 1)
	go func() { _, err := h.s.Start(context.Background(), "stuck"); started <- err }()
	waitFor(t, "the first start", func() bool { return h.count("stuck", EventStarted) == 1 })
	h.mu.Lock()
	first := h.events[0].Pid
	h.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := h.s.Restart(ctx, "stuck"); err == nil {
		t.Fatal("the restart of a server that never answers initialize succeeded")
	}
	waitFor(t, "a second start", func() bool { return h.count("stuck", EventStarted) == 2 })
	if first == 0 || !pidGone(first) {
		t.Errorf("the stuck start's process %d was not reaped", first)
	}
	if st := h.status("stuck"); st.State != StateStarting {
		t.Errorf("state %s, want starting (the new attempt)", st.State)
	}
	if _, err := h.s.Stop(context.Background(), "stuck"); err != nil {
		t.Fatal(err)
	}
	if err := <-started; err == nil {
		t.Error("the first Start succeeded")
	}
}
