//go:build linux

package transport

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The wait for a child's exit is done in the poller and leaves the child
// a zombie, so that its group can still be killed before it is reaped.
func TestPollExitWaitsForTheExitWithoutReaping(t *testing.T) {
	if f := openPidfd(os.Getpid()); f == nil {
		t.Skip("no pidfds here (Linux < 5.3, or a seccomp filter): waitid waits instead")
	} else {
		f.Close()
	}
	cmd := exec.Command("sh", "-c", "read line")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	done := make(chan struct{})
	go func() { // owned: the test waits for done
		defer close(done)
		pollExit(cmd.Process.Pid)
	}()
	select {
	case <-done:
		t.Fatal("pollExit returned while the child was running")
	case <-time.After(200 * time.Millisecond):
	}
	_, _ = stdin.Write([]byte("go\n"))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("pollExit did not return after the child exited")
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatalf("the child was reaped: %v", err)
	}
	if f := strings.Fields(string(stat)); len(f) < 3 || f[2] != "Z" {
		t.Fatalf("child state %q, want a zombie (Z)", stat)
	}
	if err := waitExited(cmd.Process.Pid); err != nil {
		t.Fatalf("waitExited after the exit: %v", err)
	}
}
