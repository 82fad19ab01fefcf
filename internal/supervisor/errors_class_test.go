package supervisor

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The supervisor's errors record, by type, the server they are about and
// which bound ran out: callers class them without reading messages.
func TestErrorClassesRecordServer(t *testing.T) {
	if err := serverUnavailable("x", " is stopped"); ServerOf(err) != "x" || !errors.Is(err, ErrUnavailable) {
		t.Errorf("serverUnavailable: ServerOf = %q, Is(ErrUnavailable) = %v", ServerOf(err), errors.Is(err, ErrUnavailable))
	}
	if ServerOf(ErrShuttingDown) != "" || !errors.Is(fmt.Errorf("w: %w", ErrShuttingDown), ErrUnavailable) {
		t.Error("ErrShuttingDown names a server or is not unavailable")
	}
	if err := unknownServer("u"); ServerOf(err) != "u" || !errors.Is(err, ErrUnknownServer) {
		t.Errorf("unknownServer: %v", err)
	}
	err := timedOut(fmt.Errorf("server %q: tools/call: %w", "s", context.DeadlineExceeded), "s", 2*time.Second, BoundCallTimeout)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Server != "s" || te.Bound != BoundCallTimeout || te.After != 2*time.Second || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timedOut = %#v", err)
	}
	if ServerOf(err) != "s" {
		t.Errorf("ServerOf(timeout) = %q", ServerOf(err))
	}
}
