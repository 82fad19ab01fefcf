package supervisor

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestInfoLogsCarryNoArgsOrEnv: a server's arguments and environment
// values (where tokens often go) appear in no log entry at info level or
// above, through a start, a call, a crash, a restart and a stop.
func TestInfoLogsCarryNoArgsOrEnv(t *testing.T) {
	const argSecret, envSecret = "arg-s3cret-4f2a", "env-s3cret-9b7c"
	core, logs := observer.New(zapcore.InfoLevel)
	spec := fakeSpec("sec", "modern")
	spec.Args = append(spec.Args, "--token="+argSecret)
	spec.Env["API_TOKEN"] = envSecret
	h := newHarness(t, Options{Specs: []Spec{spec}, Logger: zap.New(core), BackoffMin: time.Millisecond}, nil)
	h.mustEcho("sec", "hi")
	pid := h.status("sec").Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the exit to be noticed", func() bool { return h.count("sec", EventExited) == 1 })
	h.mustEcho("sec", "again")
	h.stop()

	if logs.Len() == 0 {
		t.Fatal("nothing logged at info level")
	}
	for _, e := range logs.All() {
		line := e.Message + " " + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, argSecret) || strings.Contains(line, envSecret) {
			t.Errorf("%s entry carries a secret: %s", e.Level, line)
		}
	}
}
