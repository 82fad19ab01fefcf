package logsink

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The helper process of the signal tests: a sink on its stderr (a pipe its
// parent does not read until the process was signalled), entries of
// helperEntry bytes written until the queue drops some, then "written
// <dropped>" on stdout; SIGTERM closes the sink, as mcpd does at a clean
// stop.
const (
	helperEnv   = "MCPD_LOGSINK_HELPER"
	helperQueue = 64 << 10
	helperEntry = 1000
	helperTotal = 1000 // 1 MB: more than the pipe and the queue hold
)

func init() {
	if os.Getenv(helperEnv) != "1" {
		return
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	s := New(os.Stderr, Options{MaxQueued: helperQueue, Note: func(n int) []byte {
		return []byte("dropped " + strconv.Itoa(n) + "\n")
	}})
	pad := strings.Repeat("x", helperEntry-len("line 0000 \n"))
	for i := range helperTotal {
		fmt.Fprintf(s, "line %04d %s\n", i, pad)
	}
	s.mu.Lock()
	dropped := s.droppedTotal
	s.mu.Unlock()
	fmt.Printf("written %d\n", dropped)
	<-term
	_ = s.Close(5 * time.Second)
	os.Exit(0)
}

// signalHelper runs the helper, sends it sig once it wrote everything,
// then reads its stderr; it returns the entries that reached the stream,
// the ones the sink dropped, and any line that is not a whole entry.
func signalHelper(t *testing.T, sig syscall.Signal) (delivered, dropped int, cut []string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("helper: %v", err)
	}
	dropped, _ = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "written ")))
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(stderr)
	_ = cmd.Wait()
	for _, l := range strings.SplitAfter(string(data), "\n") {
		switch {
		case l == "":
		case strings.HasPrefix(l, "dropped ") && strings.HasSuffix(l, "\n"): // counted by the helper
		case strings.HasPrefix(l, "line ") && len(l) == helperEntry:
			delivered++
		default:
			cut = append(cut, fmt.Sprintf("%.20q (%d bytes)", l, len(l)))
		}
	}
	return delivered, dropped, cut
}

// SIGKILL loses at most what the queue holds: the entries the sink took
// but had not written (those handed to the stream but not taken count
// too), never more than MaxQueued bytes; and no entry is cut.
func TestSIGKILLLosesAtMostTheQueue(t *testing.T) {
	delivered, dropped, cut := signalHelper(t, syscall.SIGKILL)
	lost := helperTotal - delivered - dropped
	if lost*helperEntry > helperQueue {
		t.Errorf("SIGKILL lost %d entries (%d bytes), more than the queue's %d bytes (%d delivered, %d dropped)",
			lost, lost*helperEntry, helperQueue, delivered, dropped)
	}
	if len(cut) > 0 {
		t.Errorf("cut entries on the stream: %v", cut)
	}
}

// SIGTERM, a clean stop, loses nothing the sink took: it writes its queue
// before the process exits.
func TestSIGTERMWritesTheQueue(t *testing.T) {
	delivered, dropped, cut := signalHelper(t, syscall.SIGTERM)
	if lost := helperTotal - delivered - dropped; lost != 0 {
		t.Errorf("SIGTERM lost %d entries (%d delivered, %d dropped)", lost, delivered, dropped)
	}
	if len(cut) > 0 {
		t.Errorf("cut entries on the stream: %v", cut)
	}
}
