package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitTimeout bounds every wait of this test; a safety net against hangs,
// never an expectation about speed.
const waitTimeout = 60 * time.Second

// syncBuffer collects a child's stderr for the test to read.
type syncBuffer struct {
	mu sync.Mutex // guards b
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a child process the test started; stop ends it by pid.
type proc struct {
	name   string
	cmd    *exec.Cmd
	stderr *syncBuffer
	waited chan struct{} // closed when cmd.Wait returned
	err    error         // cmd.Wait's result, valid once waited is closed
}

// start starts argv and registers its stop with t.Cleanup.
func start(t *testing.T, name string, argv ...string) *proc {
	t.Helper()
	return startEnv(t, name, nil, argv...)
}

// startEnv is start with the environment env (nil: this process's).
func startEnv(t *testing.T, name string, env []string, argv ...string) *proc {
	t.Helper()
	p := &proc{name: name, cmd: exec.Command(argv[0], argv[1:]...), stderr: &syncBuffer{}, waited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	p.cmd.Env = env
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.waited)
	}()
	t.Cleanup(func() { p.stop(t) })
	return p
}

// stop sends SIGTERM, waits for the exit, and kills the process if it does
// not exit within waitTimeout.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.waited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.waited:
	case <-time.After(waitTimeout):
		_ = p.cmd.Process.Kill()
		<-p.waited
		t.Errorf("%s (pid %d) ignored SIGTERM for %v; killed. stderr:\n%s", p.name, p.cmd.Process.Pid, waitTimeout, p.stderr.String())
	}
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// waitHTTP waits until url answers HTTP at all (any status) while p runs.
func waitHTTP(t *testing.T, p *proc, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := probe(ctx, url)
		if err == nil {
			return
		}
		select {
		case <-p.waited:
			t.Fatalf("%s exited (%v) before %s answered. output:\n%s", p.name, p.err, url, p.stderr.String())
		case <-ctx.Done():
			t.Fatalf("%s did not answer at %s within %v: %v. output:\n%s", p.name, url, waitTimeout, err, p.stderr.String())
		case <-tick.C:
		}
	}
}

// probe sends one GET to url and reports whether any HTTP response came back.
func probe(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("probe %s: %w", url, err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return errors.Join(fmt.Errorf("probe %s", url), err)
	}
	resp.Body.Close()
	client.CloseIdleConnections()
	return nil
}

// goBuild builds pkg (with the extra go build flags) into dir/name and
// returns the binary's path.
func goBuild(t *testing.T, root, dir, name, pkg string, flags ...string) string {
	t.Helper()
	bin := dir + "/" + name
	cmd := exec.Command("go", append(append([]string{"build", "-o", bin}, flags...), pkg)...)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", pkg, err, out)
	}
	return bin
}
