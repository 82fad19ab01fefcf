package supervisor

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/sandbox"
)

// probeBin returns the probe server, skipping without Landlock with TCP
// rules (ABI 4).
func probeBin(t *testing.T) string {
	t.Helper()
	if abi := sandbox.ABI(); abi < 4 {
		t.Skipf("the kernel's Landlock ABI is %d; these tests need 4 (TCP rules)", abi)
	}
	// Not in a dir named bin: the sandbox would grant its parent.
	bin := filepath.Join(t.TempDir(), "probe")
	out, err := exec.Command("go", "build", "-o", bin, "../sandbox/testdata/probe").CombinedOutput()
	if err != nil {
		t.Fatalf("build probe: %v\n%s", err, out)
	}
	return bin
}

// sandboxHome gives the test its own HOME (state dirs go beneath it) with
// an ~/.ssh/id_rsa no sandboxed server may read.
func sandboxHome(t *testing.T) (home, secret string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_STATE_HOME", "")
	secret = filepath.Join(home, ".ssh", "id_rsa")
	if err := os.MkdirAll(filepath.Dir(secret), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY-----\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home, secret
}

// tool calls a tool and returns its first text and whether it is an
// error result; a failed call fails the test.
func (h *harness) tool(server, name string, args any) (string, bool) {
	h.t.Helper()
	resp, err := h.s.Call(context.Background(), server, toolCall(name, args), CallOptions{})
	if err != nil {
		h.t.Fatalf("%s on %q: %v", name, server, err)
	}
	var r struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(resp.Result, &r)
	return text(h.t, resp), r.IsError
}

// listenLoopback accepts (and closes) connections on a loopback port
// until the test ends.
func listenLoopback(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { // owned: the cleanup waits for it
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return ln.Addr().String()
}

func TestSandboxDeniesWhatTheProbeMayNot(t *testing.T) {
	bin := probeBin(t)
	_, secret := sandboxHome(t)
	allowed, writable, outside := t.TempDir(), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(allowed, "ok.txt"), []byte("fine"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := listenLoopback(t)
	pol := &sandbox.Policy{Read: []string{allowed}, Write: []string{writable}}
	boxed := Spec{Name: "boxed", Command: bin, Sandbox: pol, Cwd: t.TempDir()}
	free := Spec{Name: "free", Command: bin, Cwd: boxed.Cwd}
	h := newHarness(t, Options{Specs: []Spec{boxed, free}}, nil)
	state, err := sandbox.StateDir("boxed")
	if err != nil {
		t.Fatal(err)
	}

	denied := []struct{ tool, arg, value string }{
		{"read", "path", secret},
		{"write", "path", filepath.Join(outside, "x")},
		{"write", "path", filepath.Join(allowed, "x")}, // readable only
		{"connect", "addr", addr},
	}
	for _, d := range denied {
		got, isErr := h.tool("boxed", d.tool, map[string]any{d.arg: d.value})
		if !isErr || !strings.Contains(got, "permission denied") {
			t.Errorf("sandboxed %s %s = %q (error %v), want permission denied", d.tool, d.value, got, isErr)
		}
		if got, isErr := h.tool("free", d.tool, map[string]any{d.arg: d.value}); isErr {
			t.Errorf("unsandboxed %s %s = %q, want ok (the fixture must be able to)", d.tool, d.value, got)
		}
	}
	allowedCalls := []struct{ tool, arg, value string }{
		{"read", "path", filepath.Join(allowed, "ok.txt")},
		{"write", "path", filepath.Join(writable, "x")},
		{"write", "path", filepath.Join(state, "x")},
		{"write", "path", filepath.Join(state, "tmp", "x")},
	}
	for _, a := range allowedCalls {
		if got, isErr := h.tool("boxed", a.tool, map[string]any{a.arg: a.value}); isErr {
			t.Errorf("sandboxed %s %s = %q, want ok", a.tool, a.value, got)
		}
	}
	waitFor(t, "the denial on the sandboxed server's stderr", func() bool {
		return strings.Contains(h.status("boxed").LastStderrLine, "denied")
	})
	if st := h.status("boxed"); !strings.Contains(st.Sandbox, "landlock ABI") || !strings.Contains(st.Sandbox, "network none") {
		t.Errorf("status sandbox = %q, want the Landlock ABI and network none", st.Sandbox)
	}
	if st := h.status("free"); st.Sandbox != "" {
		t.Errorf("unsandboxed status sandbox = %q, want empty", st.Sandbox)
	}
}

func TestSandboxNetworkPorts(t *testing.T) {
	bin := probeBin(t)
	sandboxHome(t)
	open, closed := listenLoopback(t), listenLoopback(t)
	_, port, _ := net.SplitHostPort(open)
	var p uint16
	for _, c := range port {
		p = p*10 + uint16(c-'0')
	}
	spec := Spec{Name: "ports", Command: bin, Sandbox: &sandbox.Policy{Network: sandbox.Network{Ports: []uint16{p}}}}
	all := Spec{Name: "all", Command: bin, Sandbox: &sandbox.Policy{Network: sandbox.Network{All: true}}}
	h := newHarness(t, Options{Specs: []Spec{spec, all}}, nil)
	if got, isErr := h.tool("ports", "connect", map[string]any{"addr": open}); isErr {
		t.Errorf("connect to the allowed port: %q", got)
	}
	if got, isErr := h.tool("ports", "connect", map[string]any{"addr": closed}); !isErr || !strings.Contains(got, "permission denied") {
		t.Errorf("connect to another port = %q, want permission denied", got)
	}
	if got, isErr := h.tool("all", "connect", map[string]any{"addr": closed}); isErr {
		t.Errorf("connect with network true: %q", got)
	}
}

func TestSandboxOpenFilesLimit(t *testing.T) {
	bin := probeBin(t)
	sandboxHome(t)
	boxed := Spec{Name: "fds", Command: bin, Sandbox: &sandbox.Policy{Limits: sandbox.Limits{OpenFiles: 64}}}
	free := Spec{Name: "free", Command: bin}
	h := newHarness(t, Options{Specs: []Spec{boxed, free}}, nil)
	if got, isErr := h.tool("fds", "openfiles", map[string]any{"n": 200}); !isErr || !strings.Contains(got, "too many open files") {
		t.Errorf("200 files under openFiles 64 = %q, want too many open files", got)
	}
	if got, isErr := h.tool("free", "openfiles", map[string]any{"n": 200}); isErr {
		t.Errorf("200 files unsandboxed = %q", got)
	}
}

// TestSandboxChangeRestarts: a reload that changes a server's sandbox
// restarts it (the sandbox is applied at exec).
func TestSandboxChangeRestarts(t *testing.T) {
	a := Spec{Name: "s", Command: "x"}
	b := a
	b.Sandbox = &sandbox.Policy{}
	c := a
	c.Sandbox = &sandbox.Policy{Network: sandbox.Network{All: true}}
	if CompareSpecs(a, b) != SpecIdentity || CompareSpecs(b, c) != SpecIdentity {
		t.Error("a sandbox change is not a change of identity")
	}
	d := b
	d.Sandbox = &sandbox.Policy{}
	if CompareSpecs(b, d) != SpecUnchanged {
		t.Error("an equal sandbox counts as a change")
	}
}
