// Package upstream runs real MCP servers that serve HTTP, for tests: the Go
// SDK test server (internal/testing/servers/gosdk -http), server-everything in
// its sse and streamableHttp modes, and server-everything on stdio behind
// supergateway's HTTP+SSE gateway. It also has a Tap, a recording proxy for
// servers that log nothing of what they receive. Every process and listener
// it starts ends with the test that started it.
package upstream

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a server process whose stdout and stderr lines are kept, in
// the order they were read.
type Process struct {
	// URL is where the server listens, once it said so.
	URL string

	name     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	graceful bool // Stop closes stdin and lets the process end itself first
	lines    *record[string]
	done     chan struct{} // closed once the process was waited for
	stopOnce sync.Once
}

// Start starts cmd in its own process group; the process is stopped
// (Stop) when the test ends.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{name: strings.Join(cmd.Args[:min(2, len(cmd.Args))], " "), cmd: cmd, lines: newRecord[string](), done: make(chan struct{})}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if p.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	t.Cleanup(p.Stop)
	var readers sync.WaitGroup
	for _, r := range []io.Reader{stdout, stderr} {
		readers.Go(func() {
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64*1024), 1<<20)
			for sc.Scan() {
				p.lines.add(sc.Text())
			}
		})
	}
	go func() { // owned: Stop waits for done
		readers.Wait()
		_ = cmd.Wait()
		close(p.done)
	}()
	return p
}

// Done is closed once the process has exited and its output was read.
func (p *Process) Done() <-chan struct{} { return p.done }

// WaitLine waits for a line containing want and returns it.
func (p *Process) WaitLine(t testing.TB, want string) string {
	t.Helper()
	return p.lines.wait(t, "line of "+p.name+" with "+want, func(l string) bool { return strings.Contains(l, want) }, p.done, p.Output)
}

// Output is every line so far.
func (p *Process) Output() string { return joinLines(p.lines.snapshot()) }

// waitURL waits for a line "listening URL" and sets p.URL.
func (p *Process) waitURL(t testing.TB) {
	t.Helper()
	l, ok := p.lines.find(func(l string) bool { return strings.HasPrefix(l, "listening ") }, p.done)
	if !ok {
		t.Fatalf("%s did not say where it listens:\n%s", p.name, p.Output())
	}
	p.URL = strings.TrimPrefix(l, "listening ")
}

// Stop ends the process and its process group and waits for it. A
// graceful process is first asked to end by closing its stdin (a gateway
// then ends the servers it started); it is killed if it has not ended
// within WaitTimeout.
func (p *Process) Stop() { p.stop(p.graceful) }

// Kill kills the process group at once and waits for it.
func (p *Process) Kill() { p.stop(false) }

func (p *Process) stop(graceful bool) {
	p.stopOnce.Do(func() {
		_ = p.stdin.Close()
		if graceful {
			select {
			case <-p.done:
				return
			case <-time.After(WaitTimeout):
			}
		}
		select {
		case <-p.done: // reaped: its pid may be another's by now
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	})
}
