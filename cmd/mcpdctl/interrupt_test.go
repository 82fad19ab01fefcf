package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Ctrl-C during a call: a real mcpdctl process, against a real mcpd whose
// child sleeps, cancels the call at the child and exits 130.
func TestInterruptExits130(t *testing.T) {
	command, args := fakemcp.Command()
	// Not quiet: the child logs each message it receives on stderr.
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{{Name: "slow", Command: command, Args: args,
		Env: map[string]string{fakemcp.EnvMode: "legacy"}}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := apiclient.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	logs, err := mcpdv1.NewMcpdClient(conn).FollowLogs(ctx, &mcpdv1.FollowLogsRequest{Name: "slow", Lines: 1000})
	if err != nil {
		t.Fatal(err)
	}

	p := exec.Command(os.Args[0], "--", "--socket", sock, "call", "slow", "sleep", "ms=600000")
	p.Env = append(os.Environ(), envRunAs+"=1")
	var stdout, stderr bytes.Buffer
	p.Stdout, p.Stderr = &stdout, &stderr
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer p.Process.Kill() // in case the test fails before it exits
	waitForLine(t, logs, "recv tools/call")
	if err := p.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err = p.Wait()
	if code := p.ProcessState.ExitCode(); code != 130 {
		t.Errorf("exit status %d (%v), want 130; stderr %q", code, err, stderr.String())
	}
	if got, want := stderr.String(), "mcpdctl: interrupted\n"; got != want {
		t.Errorf("stderr %q, want %q", got, want)
	}
	if stdout.Len() != 0 {
		t.Errorf("stdout %q, want nothing", stdout.String())
	}
	waitForLine(t, logs, "recv notifications/cancelled")
}

// waitForLine reads logs until a line contains want.
func waitForLine(t *testing.T, logs grpc.ServerStreamingClient[mcpdv1.FollowLogsResponse], want string) {
	t.Helper()
	for {
		resp, err := logs.Recv()
		if err != nil {
			t.Fatalf("no log line %q: %v", want, err)
		}
		if strings.Contains(resp.GetLine().GetText(), want) {
			return
		}
	}
}

// A child that fails its handshake is reported by mcpdctl in one line that
// names the server, the handshake and initialize once each.
func TestHandshakeFailureMessage(t *testing.T) {
	spec := mcpdtest.FakeSpec("x", "modern") // rejects a legacy initialize
	spec.Protocol = "legacy"
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{spec})
	r := mcpdctl(t, "--socket", sock, "call", "x", "echo")
	want := `mcpdctl: start "x": handshake failed: initialize: mcp error -32602: missing or invalid _meta field "io.modelcontextprotocol/protocolVersion"; fix it, then run: mcpdctl restart x` + "\n"
	if r.code != exitFailure || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr\n%s\nwant exit 1 and\n%s", r.code, r.stdout, r.stderr, want)
	}
}
