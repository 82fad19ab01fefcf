package transport

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fillStdin writes 4 KiB messages to a child that does not read its stdin
// until the pipe is full, that is until a write with a short deadline gives
// up. It returns how many messages went in.
func fillStdin(t *testing.T, p *Process) int {
	t.Helper()
	msg := []byte(`{"pad":"` + strings.Repeat("f", 4<<10) + `"}`)
	for n := 0; ; n++ {
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		err := p.WriteMessage(ctx, msg)
		cancel()
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return n
		case err != nil:
			t.Fatalf("WriteMessage %d: %v", n, err)
		case n > 10_000:
			t.Fatal("the child's stdin never filled up")
		}
	}
}

// A child that stops reading its stdin must not hold any writer past its
// deadline: neither the one waiting for room in the pipe nor those waiting
// for it.
func TestWriteToStuckStdinEndsAtDeadline(t *testing.T) {
	p := startChild(t, "sleep", func(o *Options) { o.StdinTimeout = time.Hour })
	discardStdout(t, p)
	if n := fillStdin(t, p); n == 0 {
		t.Fatal("no message fit into the pipe")
	}

	const writers = 12
	const deadline = 500 * time.Millisecond
	errs := make(chan error, writers)
	took := make(chan time.Duration, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), deadline)
			defer cancel()
			start := time.Now()
			errs <- p.WriteMessage(ctx, []byte(`{"id":`+strconv.Itoa(i)+`}`))
			took <- time.Since(start)
		})
	}
	wg.Wait()
	close(errs)
	close(took)
	for err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("WriteMessage = %v, want context.DeadlineExceeded", err)
		}
	}
	for d := range took {
		// Generous: the point is that no writer waits for the child.
		if d > deadline+5*time.Second {
			t.Errorf("a WriteMessage returned after %s, deadline %s", d, deadline)
		}
	}
	if err := p.Hung(); err != nil {
		t.Errorf("Hung() = %v before StdinTimeout", err)
	}
	select {
	case <-p.Done():
		t.Fatal("the child was killed before StdinTimeout")
	default:
	}

	// A cancelled context (no deadline) ends a waiting write too.
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(50*time.Millisecond, cancel)
	if err := p.WriteMessage(ctx, []byte(`{}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("WriteMessage with a cancelled ctx = %v, want context.Canceled", err)
	}
}

// A child whose stdin stays full for StdinTimeout is killed, even when no
// write is waiting any more, and every later write says why.
func TestStuckStdinChildIsKilledAsHung(t *testing.T) {
	const timeout = 300 * time.Millisecond
	p := startChild(t, "sleep", func(o *Options) { o.StdinTimeout = timeout })
	discardStdout(t, p)
	fillStdin(t, p)
	select {
	case <-p.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a child with a full stdin was not killed")
	}
	herr := p.Hung()
	if !errors.Is(herr, ErrHung) {
		t.Fatalf("Hung() = %v, want ErrHung", herr)
	}
	if want := `server "fake-sleep" stopped reading its stdin for 300ms`; !strings.Contains(herr.Error(), want) {
		t.Errorf("Hung() = %q, want it to say %q", herr, want)
	}
	if ws := waitStatus(t, p.ExitError()); ws.Signal() != syscall.SIGKILL {
		t.Errorf("exit %v, want killed", ws)
	}
	if err := p.WriteMessage(t.Context(), []byte(`{}`)); !errors.Is(err, ErrHung) {
		t.Errorf("WriteMessage after the hang = %v, want ErrHung", err)
	}
}

// A message whose writer gave up half way is completed before any other,
// and a message the pipe took nothing of is dropped whole: the child reads
// whole lines only.
func TestHalfWrittenMessageIsCompleted(t *testing.T) {
	p := startChild(t, "echo-after-usr1", func(o *Options) { o.StdinTimeout = time.Hour })
	var ready struct{ Ready bool }
	readJSON(t, p, &ready)

	big := `{"big":"` + strings.Repeat("b", 256<<10) + `"}`
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	err := p.WriteMessage(ctx, []byte(big))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteMessage(256 KiB) = %v, want context.DeadlineExceeded (the pipe holds less)", err)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 100*time.Millisecond)
	err = p.WriteMessage(ctx, []byte(`{"dropped":true}`))
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WriteMessage behind the half-written one = %v, want context.DeadlineExceeded", err)
	}

	if err := syscall.Kill(p.Pid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	if err := p.WriteMessage(t.Context(), []byte(`{"after":1}`)); err != nil {
		t.Fatalf("WriteMessage once the child reads: %v", err)
	}
	first, err := p.ReadMessage()
	if err != nil {
		t.Fatal(err)
	}
	if string(first) != big {
		t.Fatalf("first line is %d bytes, want the whole %d-byte message", len(first), len(big))
	}
	var next map[string]int
	readJSON(t, p, &next)
	if next["after"] != 1 {
		t.Errorf("next line = %v, want {\"after\":1}", next)
	}
	if err := p.Hung(); err != nil {
		t.Errorf("Hung() = %v", err)
	}
	_ = p.Stop()
}

// The common case, a pipe with room, allocates nothing.
func TestWriteMessageFastPathAllocs(t *testing.T) {
	p := startChild(t, "ignore-stdin", nil)
	var ready struct{ Ready bool }
	readJSON(t, p, &ready)
	msg, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", 200)})
	ctx := t.Context()
	allocs := testing.AllocsPerRun(200, func() {
		if err := p.WriteMessage(ctx, msg); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("WriteMessage allocates %.1f times per call, want 0", allocs)
	}
}
