package supervisor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/transport"
)

// TestCrashLoopErrorsSayEachThingOnce: a server that crashes at every start
// is named once per error, the session's "server exited" is not repeated
// after the supervisor's own "exited before the handshake", and the same
// stderr line printed by every crash is shown once with its count.
func TestCrashLoopErrorsSayEachThingOnce(t *testing.T) {
	clock := newFakeClock()
	opts := Options{
		Specs:             []Spec{fakeSpec("c", "crashonstart")},
		BackoffMin:        time.Millisecond,
		BackoffMax:        time.Second,
		CrashLoopCooldown: time.Hour,
	}
	h := newHarness(t, opts, func(s *Supervisor) {
		clock.install(s)
		s.bo.rand = func() float64 { return 0.5 }
	})
	first := make(chan error, 1)
	go func() { _, err := h.echo("c", "x"); first <- err }()
	for range 4 {
		clock.fireNext(t)
	}
	<-first
	_, err := h.echo("c", "x")
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("call in crash loop: %v, want ErrUnavailable", err)
	}
	if s := ServerOf(err); s != "c" {
		t.Errorf("crash-loop error is about server %q, want c", s)
	}
	msg := err.Error()
	if n := strings.Count(msg, "fakemcp: crash on start"); n != 1 || !strings.Contains(msg, "fakemcp: crash on start (×") {
		t.Errorf("crash-loop error shows the repeated stderr line %d times, want once with a count:\n%s", n, msg)
	}
	last := h.status("c").LastError
	if want := `start "c": exited before the handshake (exit status 3); last stderr lines:`; !strings.HasPrefix(last, want) {
		t.Errorf("last error %q, want it to begin %q", last, want)
	}
	for _, repeated := range []string{`"c"`, "exited"} {
		if n := strings.Count(last, repeated); n != 1 {
			t.Errorf("last error says %s %d times, want once: %q", repeated, n, last)
		}
	}
}

// TestErrorsNamingTheirServerSayWhich: an error whose message names its
// server says which (ServerOf), so that no one names it again, and names
// it once.
func TestErrorsNamingTheirServerSayWhich(t *testing.T) {
	sv := &server{spec: Spec{Name: "x"}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for what, err := range map[string]error{
		"login required": sv.loginError(nil),
		"failed":         sv.failedError(errors.New("boom")),
		"failed start":   sv.failedError(startFailed("x", errors.New("boom"))),
		"missing secret": sv.failedError(&secretError{server: "x", err: errors.New("no secret NAME")}),
		"wait ended":     waitError(ctx, "x", "tools/list", context.Cause(ctx)),
		"timed out":      timedOut(fmt.Errorf(`server "x": tools/call: %w`, context.DeadlineExceeded), "x", time.Second, BoundRequestTimeout),
		"unavailable":    serverUnavailable("x", " is stopped"),
	} {
		if s := ServerOf(err); s != "x" {
			t.Errorf("%s: about server %q, want x: %v", what, s, err)
		}
		if n := strings.Count(err.Error(), `"x"`); n != 1 {
			t.Errorf("%s: names the server %d times, want once: %v", what, n, err)
		}
	}
}

// TestStderrTailCollapsesRepeats: consecutive repeats become "line (×N)";
// the n kept are the last n distinct runs.
func TestStderrTailCollapsesRepeats(t *testing.T) {
	ring := transport.NewRing(100, 1<<20)
	for _, l := range []string{"a", "b", "b", "c", "boom", "boom", "boom"} {
		ring.Add(transport.Line{Text: l})
	}
	got := stderrTail(ring, 2)
	if want := "; last stderr lines:\n  c\n  boom (×3)"; got != want {
		t.Fatalf("stderrTail = %q, want %q", got, want)
	}
	if got := stderrTail(ring, 5); got != "; last stderr lines:\n  a\n  b (×2)\n  c\n  boom (×3)" {
		t.Fatalf("stderrTail(5) = %q", got)
	}
}

// TestCallTimeoutSaysWhichTimeout: a call that runs into mcpd's own deadline
// says how long it waited and which setting that was, not "context deadline
// exceeded", and still matches context.DeadlineExceeded.
func TestCallTimeoutSaysWhichTimeout(t *testing.T) {
	spec := fakeSpec("t", "modern")
	spec.RequestTimeout = 50 * time.Millisecond
	h := newHarness(t, Options{Specs: []Spec{spec}, MaxRequestTimeout: time.Hour}, nil)
	// Warm up with a generous timeout: a slow machine may take longer than
	// 50ms to start the child.
	if _, err := h.s.Call(context.Background(), "t", toolCall("echo", map[string]any{"message": "warm"}), CallOptions{Timeout: time.Minute}); err != nil {
		t.Fatalf("warm-up call: %v", err)
	}
	sleep := toolCall("sleep", map[string]any{"ms": 600000})
	for _, tt := range []struct {
		opts CallOptions
		want string
	}{
		{CallOptions{}, `server "t": tools/call: timed out after 50ms (its requestTimeout)`},
		{CallOptions{Timeout: 60 * time.Millisecond}, `server "t": tools/call: timed out after 60ms (the call's timeout)`},
	} {
		_, err := h.s.Call(context.Background(), "t", sleep, tt.opts)
		if !errors.Is(err, context.DeadlineExceeded) || err.Error() != tt.want {
			t.Errorf("call: %v, want %q matching DeadlineExceeded", err, tt.want)
		}
	}
}

// TestCallToCrashingServerSaysExitedOnce: a call in flight when the child
// exits names the server and says it exited once, not also the session's
// "server exited" behind it.
func TestCallToCrashingServerSaysExitedOnce(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("k", "modern")}}, nil)
	h.mustEcho("k", "warm")
	_, err := h.s.Call(context.Background(), "k", toolCall("crash", nil), CallOptions{})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("call: %v, want ErrUnavailable", err)
	}
	if want := `server "k" exited during tools/call`; err.Error() != want {
		t.Errorf("call: %q, want %q", err, want)
	}
}

// TestHandshakeFailureSaysEachThingOnce: a child that rejects initialize
// fails with one message that names the server once and says "handshake"
// and "initialize" once each, in the server's last error and in a call's.
func TestHandshakeFailureSaysEachThingOnce(t *testing.T) {
	spec := fakeSpec("x", "modern") // rejects a legacy initialize
	spec.Protocol = "legacy"
	h := newHarness(t, Options{Specs: []Spec{spec}, BackoffMin: time.Hour, BackoffMax: time.Hour}, nil)
	_, err := h.echo("x", "hi")
	const cause = `start "x": handshake failed: initialize: mcp error -32602: missing or invalid _meta field "io.modelcontextprotocol/protocolVersion"`
	if err == nil || err.Error() != cause+"; fix it, then run: mcpdctl restart x" {
		t.Errorf("call error:\n got %v\nwant %s; fix it, then run: mcpdctl restart x", err, cause)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Errorf("call error %v is not ErrUnavailable", err)
	}
	if last := h.status("x").LastError; last != cause {
		t.Errorf("last error:\n got %s\nwant %s", last, cause)
	}
}

// TestRunStderrKeepsTheFirstLines: a start's error shows that run's lines,
// the first two (where a server says why it exits) and the last ones,
// not an earlier run's.
func TestRunStderrKeepsTheFirstLines(t *testing.T) {
	ring := transport.NewRing(100, 1<<20)
	ring.Add(transport.Line{Text: "earlier run", Pid: 7})
	for _, l := range []string{"flag provided but not defined: -token", "Usage of demo:", "  -a", "  -b", "  -c", "  -d", "  -e"} {
		ring.Add(transport.Line{Text: l, Pid: 8})
	}
	want := "; last stderr lines:\n  flag provided but not defined: -token\n  Usage of demo:\n  … (2 more)\n    -c\n    -d\n    -e"
	if got := runStderr(ring, 8, 5); got != want {
		t.Fatalf("runStderr = %q, want %q", got, want)
	}
	if got := runStderr(ring, 9, 5); got != stderrTail(ring, 5) {
		t.Fatalf("runStderr of a silent run = %q, want the ring's tail", got)
	}
}
