// Package linehost plays an MCP host on a line-delimited stdio server
// run in-process (the bridge, `mcpdctl bridge`): it writes lines to the
// server's stdin and reads each JSON line of its stdout, with waits that
// fail the test after a bound.
package linehost

import (
	"bufio"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"time"
)

// Host is the host side of one run of a stdio server.
type Host struct {
	t  testing.TB
	in *io.PipeWriter
	// Lines are the server's messages, in order; closed when its stdout
	// ends.
	Lines chan map[string]json.RawMessage
}

// Start runs serve with the host's pipes as its stdin and stdout on a
// goroutine of its own; serve's error fails the test, with describe's
// text after it (nil: none). When the test ends the host closes the
// server's stdin, as a host that goes away does, and waits for serve to
// return.
func Start(t testing.TB, serve func(stdin io.Reader, stdout io.Writer) error, describe func() string) *Host {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &Host{t: t, in: inW, Lines: make(chan map[string]json.RawMessage, 64)}
	var wg sync.WaitGroup
	wg.Go(func() {
		err := serve(inR, outW)
		outW.Close()
		if err != nil {
			more := ""
			if describe != nil {
				more = describe()
			}
			t.Errorf("the stdio server: %v\n%s", err, more)
		}
	})
	wg.Go(func() {
		defer close(h.Lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 64<<20)
		for sc.Scan() {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Errorf("the stdio server wrote %q: %v", sc.Text(), err)
				continue
			}
			h.Lines <- m
		}
		if err := sc.Err(); err != nil {
			t.Errorf("reading the stdio server's output: %v", err)
		}
		_, _ = io.Copy(io.Discard, outR) // the server's writes never block
	})
	t.Cleanup(func() {
		inW.Close() // the host goes away: the server exits
		for range h.Lines {
		}
		wg.Wait()
	})
	return h
}

// Send writes msg and a newline to the server's stdin.
func (h *Host) Send(msg string) {
	h.t.Helper()
	if _, err := io.WriteString(h.in, msg+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// CloseStdin closes the server's stdin, as a host that has nothing more
// to say does.
func (h *Host) CloseStdin() { h.in.Close() }

// Next returns the server's next message that satisfies match, waiting
// 10s at most.
func (h *Host) Next(what string, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	h.t.Helper()
	return h.NextWithin(what, 10*time.Second, match)
}

// NextWithin is Next, waiting d at most.
func (h *Host) NextWithin(what string, d time.Duration, match func(map[string]json.RawMessage) bool) map[string]json.RawMessage {
	h.t.Helper()
	timeout := time.NewTimer(d)
	defer timeout.Stop()
	for {
		select {
		case m, ok := <-h.Lines:
			if !ok {
				h.t.Fatalf("the stdio server exited before %s", what)
			}
			if match(m) {
				return m
			}
		case <-timeout.C:
			h.t.Fatalf("no %s from the stdio server", what)
		}
	}
}

// Response returns the server's response to id.
func (h *Host) Response(id string) map[string]json.RawMessage {
	h.t.Helper()
	return h.Next("response "+id, func(m map[string]json.RawMessage) bool { return string(m["id"]) == id })
}
