package transport

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestEchoRoundTrip(t *testing.T) {
	p := startChild(t, "echo", nil)
	big := `{"big":"` + strings.Repeat("q", 200_000) + `"}`
	tests := []struct {
		name     string
		write    string
		wantRead string
	}{
		{"small", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"larger than the read buffer", big, big},
		{"pretty-printed is compacted", "{\n  \"a\": [1,\n 2]\n}", `{"a":[1,2]}`},
		{"string with escaped newline", `{"s":"a\nb"}`, `{"s":"a\nb"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := p.WriteMessage(t.Context(), []byte(tt.write)); err != nil {
				t.Fatalf("WriteMessage: %v", err)
			}
			got, err := p.ReadMessage()
			if err != nil {
				t.Fatalf("ReadMessage: %v", err)
			}
			if string(got) != tt.wantRead {
				t.Errorf("read %.80q, want %.80q", got, tt.wantRead)
			}
		})
	}
	if err := p.WriteMessage(t.Context(), []byte("{\n bad")); err == nil || errors.Is(err, ErrClosed) {
		t.Errorf("WriteMessage(invalid with newline) = %v, want a json error", err)
	}
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// The echo child exits on stdin EOF: a clean exit proves stdin was
	// closed first, without signals.
	if err := p.ExitError(); err != nil {
		t.Errorf("ExitError = %v, want nil (exit on stdin close)", err)
	}
	if !p.Stopping() {
		t.Error("Stopping() = false after Stop")
	}
	for range 2 {
		if _, err := p.ReadMessage(); err != io.EOF {
			t.Errorf("ReadMessage after stop = %v, want io.EOF", err)
		}
	}
}

func TestReadMessageFraming(t *testing.T) {
	tests := []struct {
		name      string
		child     string
		maxLine   int
		want      []string
		wantStats Stats
	}{
		{
			name:    "garbage, blank, crlf and oversize lines",
			child:   "mixed",
			maxLine: mixedMax,
			want: []string{`{"n":1}`, `{"n":2}`, mixedLong, `{"n":3}`, mixedEdge,
				`{"n":4}`, `{"n":5}`},
			wantStats: Stats{LinesSkipped: 4, LinesOversize: 2},
		},
		{
			name:      "oversize within the read buffer",
			child:     "mixed-small",
			maxLine:   16,
			want:      []string{`{"a":1}`, `{"b":2}`},
			wantStats: Stats{LinesOversize: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startChild(t, tt.child, func(o *Options) { o.MaxLineSize = tt.maxLine })
			var got []string
			readAll(t, p, func(msg string) { got = append(got, msg) })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("messages (-want +got):\n%.2000s", diff)
			}
			<-p.Done()
			if diff := cmp.Diff(tt.wantStats, p.Stats()); diff != "" {
				t.Errorf("stats (-want +got):\n%s", diff)
			}
			if err := p.ExitError(); err != nil {
				t.Errorf("ExitError = %v", err)
			}
		})
	}
}

func TestStderrLines(t *testing.T) {
	ring := NewRing(0, 0)
	p := startChild(t, "stderr-lines", func(o *Options) { o.Stderr = ring })
	discardStdout(t, p)
	<-p.Done()
	got := ring.Last(100)
	want := []Line{
		{Text: "line1"},
		{Text: "line2"},
		{Text: ""},
		{Text: strings.Repeat("x", MaxStderrLine), Truncated: true},
		{Text: "bad \uFFFD utf8"},
		{Text: "tail-no-newline"},
	}
	for i := range want {
		want[i].Pid = p.Pid()
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Line{}, "Time")); diff != "" {
		t.Errorf("stderr lines (-want +got):\n%.2000s", diff)
	}
	for _, l := range got {
		if l.Time.IsZero() {
			t.Errorf("line %q has no time", l.Text)
		}
	}
}

// TestStderrFlood: 100 MB on stderr without a newline neither blocks the
// child nor grows memory: one truncated line is kept.
func TestStderrFlood(t *testing.T) {
	ring := NewRing(0, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	p := startChild(t, "stderr-flood", func(o *Options) { o.Stderr = ring })
	var msg struct{ Done bool }
	readJSON(t, p, &msg) // written after the flood: the child was not blocked
	if _, err := p.ReadMessage(); err != io.EOF {
		t.Fatalf("ReadMessage = %v, want io.EOF", err)
	}
	<-p.Done()
	runtime.ReadMemStats(&after)
	if err := p.ExitError(); err != nil {
		t.Fatalf("ExitError = %v", err)
	}
	got := ring.Last(10)
	want := []Line{
		{Text: strings.Repeat("z", MaxStderrLine), Truncated: true, Pid: p.Pid()},
		{Text: "end", Pid: p.Pid()},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Line{}, "Time")); diff != "" {
		t.Errorf("stderr lines (-want +got):\n%.500s", diff)
	}
	// Everything allocated by this test (the drain, the ring, logging the
	// truncated line) is far below the 100 MB the child wrote.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d bytes while draining 100 MB of stderr", alloc)
	}
}

func TestStopClosesStdinFirst(t *testing.T) {
	p := startChild(t, "echo", nil)
	if err := p.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := p.ExitError(); err != nil {
		t.Errorf("ExitError = %v, want a clean exit on stdin EOF", err)
	}
}

func TestStopEscalation(t *testing.T) {
	tests := []struct {
		name  string
		child string
		grace time.Duration
		want  syscall.Signal
	}{
		// A generous grace: the child must get scheduled to die of SIGTERM
		// before SIGKILL follows.
		{"ignores stdin close", "ignore-stdin", time.Second, syscall.SIGTERM},
		{"ignores sigterm", "ignore-term", 200 * time.Millisecond, syscall.SIGKILL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startChild(t, tt.child, func(o *Options) { o.ShutdownGrace = tt.grace })
			var ready struct{ Ready bool }
			readJSON(t, p, &ready) // signal handling is set up
			discardStdout(t, p)
			if p.Stopping() {
				t.Error("Stopping() = true before Stop")
			}
			if err := p.Stop(); err != nil {
				t.Fatalf("Stop: %v", err)
			}
			select {
			case <-p.Done():
			default:
				t.Fatal("Stop returned before Done")
			}
			ws := waitStatus(t, p.ExitError())
			if !ws.Signaled() || ws.Signal() != tt.want {
				t.Errorf("exit status %v, want killed by %v", ws, tt.want)
			}
			if !p.Stopping() {
				t.Error("Stopping() = false after Stop")
			}
		})
	}
}

func TestStopConcurrentAndIdempotent(t *testing.T) {
	p := startChild(t, "ignore-term", func(o *Options) { o.ShutdownGrace = 100 * time.Millisecond })
	var ready struct{ Ready bool }
	readJSON(t, p, &ready)
	discardStdout(t, p)
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Go(func() { errs[i] = p.Stop() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Stop #%d: %v", i, err)
		}
	}
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after stop: %v", err)
	}
	p.Kill() // no-op on a reaped child
}

func TestKill(t *testing.T) {
	p := startChild(t, "sleep", nil)
	discardStdout(t, p)
	p.Kill()
	<-p.Done()
	if ws := waitStatus(t, p.ExitError()); !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("exit status %v, want SIGKILL", ws)
	}
	if p.Stopping() {
		t.Error("Stopping() = true after Kill without Stop")
	}
	p.Kill()
	if err := p.Stop(); err != nil {
		t.Errorf("Stop after exit: %v", err)
	}
}

// TestGrandchildDoesNotOutliveChild: the child leaves a grandchild (in its
// process group, holding its stdout and stderr) behind, after Stop and
// after exiting on its own.
func TestGrandchildDoesNotOutliveChild(t *testing.T) {
	tests := []struct {
		child    string
		stop     bool
		wantExit int
	}{
		{"grandchild", true, 0},
		{"grandchild-exit", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.child, func(t *testing.T) {
			p := startChild(t, tt.child, nil)
			var msg struct{ Grandchild int }
			readJSON(t, p, &msg)
			gpid := msg.Grandchild
			_, start, err := procStart(gpid)
			if err != nil {
				t.Fatalf("grandchild %d: %v", gpid, err)
			}
			t.Cleanup(func() {
				if !processGone(gpid, start) {
					_ = syscall.Kill(gpid, syscall.SIGKILL)
				}
			})
			if processGone(gpid, start) {
				t.Fatal("grandchild gone before the test did anything")
			}
			if tt.stop {
				if err := p.Stop(); err != nil {
					t.Fatalf("Stop: %v", err)
				}
			} else if err := p.WriteMessage(t.Context(), []byte(`{"exit":true}`)); err != nil {
				t.Fatalf("telling the child to exit: %v", err)
			}
			// stdout reaches EOF although the grandchild held it: the group
			// was killed.
			if _, err := p.ReadMessage(); err != io.EOF {
				t.Fatalf("ReadMessage = %v, want io.EOF", err)
			}
			<-p.Done()
			if tt.wantExit == 0 {
				if err := p.ExitError(); err != nil {
					t.Errorf("ExitError = %v, want nil", err)
				}
			} else if code := waitStatus(t, p.ExitError()).ExitStatus(); code != tt.wantExit {
				t.Errorf("exit status %d, want %d", code, tt.wantExit)
			}
			waitGone(t, gpid, start)
		})
	}
}

// TestEscapedGrandchildHoldingPipes: a grandchild that left the process
// group (so the group kill misses it) and holds stdout and stderr must not
// keep ReadMessage or Done blocked after the child exits.
func TestEscapedGrandchildHoldingPipes(t *testing.T) {
	p := startChild(t, "grandchild-escape", nil)
	var msg struct{ Grandchild int }
	readJSON(t, p, &msg)
	gpid := msg.Grandchild
	t.Cleanup(func() { _ = syscall.Kill(gpid, syscall.SIGKILL) })
	<-p.Done()
	if _, err := p.ReadMessage(); err != io.EOF {
		t.Fatalf("ReadMessage = %v, want io.EOF", err)
	}
	if code := waitStatus(t, p.ExitError()).ExitStatus(); code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
}

func TestCrashOnStart(t *testing.T) {
	p := startChild(t, "crash", nil)
	if _, err := p.ReadMessage(); err != io.EOF {
		t.Fatalf("ReadMessage = %v, want io.EOF", err)
	}
	<-p.Done()
	if code := waitStatus(t, p.ExitError()).ExitStatus(); code != 3 {
		t.Errorf("exit status %d, want 3", code)
	}
	if p.Stopping() {
		t.Error("Stopping() = true for an unexpected exit")
	}
	if err := p.WriteMessage(t.Context(), []byte(`{}`)); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteMessage after exit = %v, want ErrClosed", err)
	}
}

func TestWriteErrClosed(t *testing.T) {
	t.Run("after stop", func(t *testing.T) {
		p := startChild(t, "echo", nil)
		discardStdout(t, p)
		if err := p.Stop(); err != nil {
			t.Fatal(err)
		}
		err := p.WriteMessage(t.Context(), []byte(`{"id":1}`))
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("WriteMessage = %v, want ErrClosed", err)
		}
		if !strings.Contains(err.Error(), p.name) {
			t.Errorf("error %q does not name the server", err)
		}
	})
	t.Run("child closed its stdin (EPIPE)", func(t *testing.T) {
		p := startChild(t, "close-stdin", nil)
		var ready struct{ Ready bool }
		readJSON(t, p, &ready)
		if err := p.WriteMessage(t.Context(), []byte(`{"id":1}`)); !errors.Is(err, ErrClosed) {
			t.Fatalf("WriteMessage = %v, want ErrClosed", err)
		}
		select {
		case <-p.Done():
			t.Fatal("child exited; the test wants it alive with stdin closed")
		default:
		}
	})
}

func TestCommandNotFound(t *testing.T) {
	dir := t.TempDir()
	notExec := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct{ name, command string }{
		{"not in PATH", "mcpd-no-such-command-xyz"},
		{"absolute path missing", filepath.Join(dir, "missing")},
		{"not executable", notExec},
		{"directory", dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(Options{Name: "srv", Command: tt.command})
			if err == nil {
				p.Kill()
				<-p.Done()
				t.Fatal("Start succeeded")
			}
			if !errors.Is(err, ErrCommandNotFound) {
				t.Errorf("error %v does not wrap ErrCommandNotFound", err)
			}
			if !strings.Contains(err.Error(), `"srv"`) || !strings.Contains(err.Error(), tt.command) {
				t.Errorf("error %q does not name server and command", err)
			}
		})
	}
	t.Run("missing working directory is not command not found", func(t *testing.T) {
		exe, _ := os.Executable()
		_, err := Start(Options{Name: "srv", Command: exe, Dir: filepath.Join(dir, "nope")})
		if err == nil || errors.Is(err, ErrCommandNotFound) {
			t.Errorf("Start = %v, want a working directory error", err)
		}
	})
}

func TestEnvironment(t *testing.T) {
	systemd := []string{"NOTIFY_SOCKET=/run/x", "LISTEN_FDS=1", "LISTEN_PID=1", "LISTEN_FDNAMES=mcpd.sock"}
	childEnv := func(t *testing.T, opts func(*Options)) []string {
		p := startChild(t, "env", opts)
		var msg struct{ Env []string }
		readJSON(t, p, &msg)
		return msg.Env
	}
	check := func(t *testing.T, env []string, keep string) {
		if !slices.Contains(env, keep) {
			t.Errorf("child env lacks %q", keep)
		}
		for _, kv := range env {
			for _, bad := range systemd {
				if k, _, _ := strings.Cut(bad, "="); strings.HasPrefix(kv, k+"=") {
					t.Errorf("child sees %q", kv)
				}
			}
		}
	}
	t.Run("explicit env", func(t *testing.T) {
		env := childEnv(t, func(o *Options) {
			o.Env = append([]string{"KEEP_ME=1", childEnvVar + "=env"}, systemd...)
		})
		check(t, env, "KEEP_ME=1")
		if len(env) != 2 {
			t.Errorf("child env = %q, want exactly the given variables", env)
		}
	})
	t.Run("nil env inherits", func(t *testing.T) {
		for _, kv := range systemd {
			k, v, _ := strings.Cut(kv, "=")
			t.Setenv(k, v)
		}
		t.Setenv("KEEP_INHERITED", "2")
		t.Setenv(childEnvVar, "env")
		env := childEnv(t, func(o *Options) { o.Env = nil })
		os.Unsetenv(childEnvVar) // t.Setenv restores it at cleanup
		check(t, env, "KEEP_INHERITED=2")
	})
}

func TestWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	p := startChild(t, "pwd", func(o *Options) { o.Dir = dir })
	var msg struct{ Wd string }
	readJSON(t, p, &msg)
	want, _ := filepath.EvalSymlinks(dir)
	if got, _ := filepath.EvalSymlinks(msg.Wd); got != want {
		t.Errorf("child cwd %q, want %q", got, want)
	}
}

// TestConcurrentWriters: messages far larger than PIPE_BUF from many
// goroutines arrive as intact lines.
func TestConcurrentWriters(t *testing.T) {
	const writers, perWriter = 8, 40
	p := startChild(t, "echo", nil)
	type msg struct {
		W, I    int
		Payload string
	}
	payload := func(w, i int) string { return strings.Repeat(fmt.Sprintf("%d.%d|", w, i), 2000) }
	got := make(chan msg, writers*perWriter)
	readErr := make(chan error, 1)
	go func() {
		defer close(got)
		for range writers * perWriter {
			b, err := p.ReadMessage()
			if err != nil {
				readErr <- err
				return
			}
			var m msg
			if err := json.Unmarshal(b, &m); err != nil {
				readErr <- fmt.Errorf("corrupt line %.100q: %w", b, err)
				return
			}
			got <- m
		}
		readErr <- nil
	}()
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				b, _ := json.Marshal(msg{W: w, I: i, Payload: payload(w, i)})
				if err := p.WriteMessage(t.Context(), b); err != nil {
					t.Errorf("WriteMessage: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	seen := map[[2]int]bool{}
	for m := range got {
		if m.Payload != payload(m.W, m.I) {
			t.Fatalf("message %d.%d has a mixed payload", m.W, m.I)
		}
		if seen[[2]int{m.W, m.I}] {
			t.Fatalf("message %d.%d twice", m.W, m.I)
		}
		seen[[2]int{m.W, m.I}] = true
	}
	if err := <-readErr; err != nil {
		t.Fatal(err)
	}
	if len(seen) != writers*perWriter {
		t.Errorf("got %d messages, want %d", len(seen), writers*perWriter)
	}
}

func BenchmarkRoundTrip(b *testing.B) {
	p := startChild(b, "echo", nil)
	msg := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` +
		strings.Repeat("x", 200) + `"}}}`)
	b.SetBytes(int64(len(msg)))
	b.ReportAllocs()
	for b.Loop() {
		if err := p.WriteMessage(b.Context(), msg); err != nil {
			b.Fatal(err)
		}
		if _, err := p.ReadMessage(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if err := p.Stop(); err != nil {
		b.Fatal(err)
	}
}

// A child writing many stderr lines at once has them all in the ring, and
// at most stderrLogPerSecond of them in mcpd's log, with the rest counted.
func TestStderrFloodLogBounded(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	ring := NewRing(2000, 1<<20)
	p := startChild(t, "stderr-many", func(o *Options) { o.Stderr, o.Logger = ring, zap.New(core) })
	<-p.Done()
	if n := len(ring.Last(2000)); n != 1000 {
		t.Errorf("ring has %d lines, want 1000", n)
	}
	logged := logs.FilterMessage("child stderr").Len()
	skipped := 0
	for _, e := range logs.FilterMessage("child stderr lines not logged (mcpdctl logs has them)").All() {
		skipped += int(e.ContextMap()["lines"].(int64))
	}
	if logged > 1000 || logged+skipped != 1000 || logged < stderrLogPerSecond {
		t.Errorf("%d lines logged and %d counted as not logged, want all 1000 accounted for, %d or more logged", logged, skipped, stderrLogPerSecond)
	}
}
