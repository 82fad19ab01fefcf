package e2e

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// With its stderr a pipe that nobody reads (a paused pager, a stuck log
// collector), mcpd keeps answering: its log entries queue, then are
// dropped, instead of stopping whoever logs. Each call below logs a debug
// entry, far more than the pipe holds. Once the pipe is read again, the log
// says how many entries were dropped, and the shutdown's lines come
// through.
func TestDaemonKeepsAnsweringWhileNobodyReadsItsStderr(t *testing.T) {
	skipShort(t)
	dir := tempdir.Short(t)
	cfg := writeConfig(t, dir, map[string]server{"echo": {Mode: "legacy", Autostart: true}})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := startLoggingDaemon(t, dir, cfg, w)
	w.Close() // mcpd holds the only write end
	c := mcpdv1.NewMcpdClient(dialSocket(t, d.socket))

	// About 8000 entries of 250 bytes: the pipe holds 64 KiB, the queue 1 MiB.
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitTimeout)
	defer cancel()
	const workers, calls = 8, 1000
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range calls {
				_, err := c.CallToolUnary(ctx, &mcpdv1.CallToolRequest{Server: "no-such-server", Tool: "echo"})
				if status.Code(err) != codes.NotFound {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("a call while stderr was not read: %v (want NOT_FOUND)", err)
	}

	out := make(chan string, 1)
	go func() { // owned: ends when mcpd, the last writer, exits
		b, _ := io.ReadAll(r)
		out <- string(b)
	}()
	if err := d.stop(t); err != nil {
		t.Errorf("mcpd: %v", err)
	}
	var log string
	select {
	case log = <-out:
	case <-time.After(waitTimeout):
		t.Fatal("mcpd's stderr was not closed at its exit")
	}
	if !strings.Contains(log, `"msg":"log output too slow: entries were dropped (stderr was not being read)","dropped":`) {
		t.Errorf("no note of the dropped entries in %d bytes of log", len(log))
	}
	if !strings.Contains(log, `"msg":"mcpd stopped"`) {
		t.Errorf("the shutdown's last line is missing; the log ends with %q", tail(log, 400))
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Error("the calls took the whole timeout")
	}
}

// tail returns the last n bytes of s.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
