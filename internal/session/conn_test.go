package session_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/transport"
)

// Conn is implemented by the transport, and so is OversizeReporter.
var (
	_ session.Conn             = (*transport.Process)(nil)
	_ session.OversizeReporter = (*transport.Process)(nil)
)

// child is a fake MCP server run by the real transport, with its stderr
// kept for assertions.
type child struct {
	*transport.Process
	t      testing.TB
	stderr *transport.Ring
}

func startChild(t testing.TB, mode string, extraEnv ...string) *child {
	t.Helper()
	return startChildOpts(t, mode, nil, extraEnv...)
}

// startChildOpts is startChild with the transport options changed by mod.
func startChildOpts(t testing.TB, mode string, mod func(*transport.Options), extraEnv ...string) *child {
	t.Helper()
	path, args := fakemcp.Command()
	ring := transport.NewRing(1<<20, 256<<20)
	opts := transport.Options{
		Name:          "fake",
		Command:       path,
		Args:          args,
		Env:           fakemcp.Env(mode, extraEnv...),
		ShutdownGrace: 5 * time.Second,
		Stderr:        ring,
		MaxLineSize:   64 << 10,
	}
	if mod != nil {
		mod(&opts)
	}
	p, err := transport.Start(opts)
	if err != nil {
		t.Fatal(err)
	}
	c := &child{Process: p, t: t, stderr: ring}
	t.Cleanup(c.kill)
	return c
}

// kill ends the child (its whole process group) and waits until it was
// reaped.
func (c *child) kill() {
	c.Kill()
	<-c.Done()
}

func (c *child) stderrText() string {
	var b strings.Builder
	for _, l := range c.stderr.Last(1 << 20) {
		b.WriteString(l.Text)
		b.WriteByte('\n')
	}
	return b.String()
}

// waitStderr polls the child's stderr until it contains line as a whole
// line, failing the test after a generous deadline.
func (c *child) waitStderr(line string) {
	c.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !c.hasStderr(line) {
		if time.Now().After(deadline) {
			c.t.Fatalf("child never wrote %q; stderr:\n%s", line, c.stderrText())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (c *child) hasStderr(line string) bool {
	for _, l := range strings.Split(c.stderrText(), "\n") {
		if l == line {
			return true
		}
	}
	return false
}
