package supervisor

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// stallServer starts an autostarted legacy fake with the given
// stdinTimeout and makes it stop reading its stdin; it returns the pid.
func stallServer(t *testing.T, h *harness, name string) int {
	t.Helper()
	st := h.waitState(name, StateReady)
	resp, err := h.s.Call(t.Context(), name, toolCall("stallstdin", map[string]any{}), CallOptions{})
	if err != nil {
		t.Fatalf("stallstdin: %v", err)
	}
	if got := text(t, resp); got != "stalled" {
		t.Fatalf("stallstdin = %q", got)
	}
	return st.Pid
}

// A server that stops reading its stdin holds no call past its deadline,
// whether the app's context or the request timeout sets it; calls in flight
// drop back to zero; StdinTimeout after its stdin filled up it is killed as
// hung, which counts as a crash, and it is restarted.
func TestStuckStdinCallsEndAtDeadlineAndServerRestarts(t *testing.T) {
	const (
		stdinTimeout = 4 * time.Second
		deadline     = 2 * time.Second
		calls        = 12
		margin       = 1500 * time.Millisecond
	)
	spec := fakeSpec("stuck", "legacy,quiet")
	spec.Autostart = true
	spec.StdinTimeout = stdinTimeout
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	pid := stallServer(t, h, "stuck")

	// More than the pipe and the fake's buffer hold.
	big := toolCall("echo", map[string]any{"message": strings.Repeat("x", 16<<10)})
	type result struct {
		err  error
		took time.Duration
	}
	results := make(chan result, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Go(func() {
			start := time.Now()
			var err error
			if i%2 == 0 { // the app's deadline
				ctx, cancel := context.WithTimeout(t.Context(), deadline)
				_, err = h.s.Call(ctx, "stuck", big, CallOptions{})
				cancel()
			} else { // the request timeout
				_, err = h.s.Call(t.Context(), "stuck", big, CallOptions{Timeout: deadline})
			}
			results <- result{err, time.Since(start)}
		})
	}
	// Its request sits in the pipe or waits for room: either way it ends
	// when the server is found hung.
	patient := make(chan error, 1)
	go func() {
		_, err := h.s.Call(t.Context(), "stuck", toolCall("echo", map[string]any{"message": "hi"}), CallOptions{Timeout: time.Minute})
		patient <- err
	}()
	wg.Wait()
	close(results)
	for r := range results {
		if !errors.Is(r.err, context.DeadlineExceeded) {
			t.Errorf("Call = %v, want context.DeadlineExceeded", r.err)
		}
		if r.took > deadline+margin {
			t.Errorf("a call returned after %s, deadline %s", r.took, deadline)
		}
	}
	if n := h.status("stuck").CallsInFlight; n != 1 { // the patient call
		t.Errorf("calls in flight = %d after the 12 calls returned, want 1", n)
	}

	const reason = `server "stuck" stopped reading its stdin for 4s`
	err := <-patient
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), reason+"; restarting it") {
		t.Errorf("call in flight when the server was found hung = %v, want UNAVAILABLE saying %q", err, reason+"; restarting it")
	}
	var st Status
	waitFor(t, "the restart", func() bool {
		st = h.status("stuck")
		return st.State == StateReady && st.Restarts > 0
	})
	if st.Pid == pid || st.Restarts != 1 {
		t.Errorf("after the hang: pid %d (was %d), restarts %d; want a new process, restarts 1", st.Pid, pid, st.Restarts)
	}
	if st.CallsInFlight != 0 {
		t.Errorf("calls in flight = %d, want 0", st.CallsInFlight)
	}
	h.mu.Lock()
	var exits []Event
	for _, ev := range h.events {
		if ev.Server == "stuck" && ev.Kind == EventExited {
			exits = append(exits, ev)
		}
	}
	h.mu.Unlock()
	if len(exits) != 1 || !strings.Contains(exits[0].Error, reason) || exits[0].Exit != "signal: killed" {
		t.Errorf("exit events = %+v, want one, killed, saying %q", exits, reason)
	}
	h.mustEcho("stuck", "back")
}

// A hang counts toward the crash-loop bound like any unexpected exit.
func TestStuckStdinCountsTowardCrashLoop(t *testing.T) {
	spec := fakeSpec("stuck", "legacy,quiet")
	spec.Autostart = true
	spec.StdinTimeout = 500 * time.Millisecond
	h := newHarness(t, Options{Specs: []Spec{spec}, CrashLoopMax: 1}, nil)
	stallServer(t, h, "stuck")
	// Fill the stdin: this call waits for room until its deadline.
	big := toolCall("echo", map[string]any{"message": strings.Repeat("x", 256<<10)})
	if _, err := h.s.Call(t.Context(), "stuck", big, CallOptions{Timeout: 100 * time.Millisecond}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v, want context.DeadlineExceeded", err)
	}
	st := h.waitState("stuck", StateCrashLoop)
	if !strings.Contains(st.LastError, `server "stuck" stopped reading its stdin for 500ms`) {
		t.Errorf("last error = %q, want it to say the server stopped reading its stdin", st.LastError)
	}
	_, err := h.echo("stuck", "x")
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "crash-looping") {
		t.Errorf("call during the crash loop = %v, want UNAVAILABLE crash-looping", err)
	}
}
