package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// owner is an app connection as a Scope sees it: open until closed.
type owner struct {
	id     uint64
	closed atomic.Bool
}

func (o *owner) alive() bool { return !o.closed.Load() }

func (o *owner) scope(app, root string) Scope {
	return Scope{App: app, Root: root, Owner: o.id, Alive: o.alive}
}

// callsOf returns how many tools/call requests the child serving ctx's
// scope has received, its own stats call included: state each process
// keeps for itself.
func callsOf(t *testing.T, h *harness, ctx context.Context, server string) int {
	t.Helper()
	resp, err := h.s.Call(ctx, server, toolCall("stats", nil), CallOptions{})
	if err != nil {
		t.Fatalf("stats on %q: %v", server, err)
	}
	var st fakemcp.Stats
	if err := json.Unmarshal([]byte(text(t, resp)), &st); err != nil {
		t.Fatalf("stats: %v", err)
	}
	return st.Methods["tools/call"]
}

func echoIn(t *testing.T, h *harness, ctx context.Context, server, msg string) {
	t.Helper()
	resp, err := h.s.Call(ctx, server, toolCall("echo", map[string]any{"message": msg}), CallOptions{})
	if err != nil {
		t.Fatalf("echo on %q: %v", server, err)
	}
	if got := text(t, resp); got != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

func instancePids(st Status) map[string]int {
	out := map[string]int{}
	for _, in := range st.Instances {
		out[in.Instance] = in.Pid
	}
	return out
}

func TestClientInstancesPerApp(t *testing.T) {
	spec := fakeSpec("per", "legacy")
	spec.Share = ShareClient
	h := newHarness(t, Options{Specs: []Spec{spec}, InstanceSweep: 10 * time.Millisecond}, nil)
	a, b, a2 := &owner{id: 1}, &owner{id: 2}, &owner{id: 3}
	ctxA := WithScope(t.Context(), a.scope("app-a 100", ""))
	ctxB := WithScope(t.Context(), b.scope("app-b 200", ""))
	ctxA2 := WithScope(t.Context(), a2.scope("app-a 100", "")) // the same app, another connection

	echoIn(t, h, ctxA, "per", "one")
	echoIn(t, h, ctxA, "per", "two")
	echoIn(t, h, ctxB, "per", "three")
	if got := callsOf(t, h, ctxA2, "per"); got != 3 {
		t.Errorf("app a's instance saw %d calls, want 3 (its two echoes and this stats)", got)
	}
	if got := callsOf(t, h, ctxB, "per"); got != 2 {
		t.Errorf("app b's instance saw %d calls, want 2", got)
	}

	st := h.status("per")
	pids := instancePids(st)
	if len(pids) != 2 || pids["app-a 100"] == 0 || pids["app-b 200"] == 0 || pids["app-a 100"] == pids["app-b 200"] {
		t.Fatalf("instances = %v, want two with distinct pids", pids)
	}
	if st.State != StateReady || st.Pid != 0 || st.Share != ShareClient {
		t.Errorf("server status = state %s pid %d share %q, want ready, no pid of its own, client", st.State, st.Pid, st.Share)
	}

	// Calls without an app identity are refused, saying why.
	_, err := h.s.Call(t.Context(), "per", toolCall("echo", map[string]any{"message": "x"}), CallOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "one instance per app") {
		t.Errorf("call without scope: %v, want ErrInvalid naming the sharing", err)
	}

	// App b leaves: its instance goes, its child is reaped; a's stays.
	pidB := pids["app-b 200"]
	b.closed.Store(true)
	waitFor(t, "app b's instance to go", func() bool {
		_, ok := instancePids(h.status("per"))["app-b 200"]
		return !ok && pidGone(pidB)
	})
	a.closed.Store(true) // a2 still holds app a's instance
	if got := callsOf(t, h, ctxA2, "per"); got != 4 {
		t.Errorf("app a's instance saw %d calls after its first connection left, want 4", got)
	}
	a2.closed.Store(true)
	pidA := pids["app-a 100"]
	waitFor(t, "app a's instance to go", func() bool { return len(h.status("per").Instances) == 0 && pidGone(pidA) })
}

func TestRootInstancesRunInTheirRoot(t *testing.T) {
	spec := fakeSpec("ws", "legacy")
	spec.Share = ShareRoot
	h := newHarness(t, Options{Specs: []Spec{spec}, InstanceSweep: 10 * time.Millisecond}, nil)
	r1, r2 := t.TempDir(), t.TempDir()
	o := &owner{id: 1}
	for _, root := range []string{r1, r2, r1} {
		ctx := WithScope(t.Context(), o.scope("app 1", root))
		echoIn(t, h, ctx, "ws", "hi")
		resp, err := h.s.Call(ctx, "ws", toolCall("roots", nil), CallOptions{})
		if err != nil {
			t.Fatalf("roots: %v", err)
		}
		if got := text(t, resp); !strings.Contains(got, "file://"+filepath.ToSlash(root)+`"`) || strings.Count(got, "file://") != 1 {
			t.Errorf("roots/list of the instance of %s = %s, want that root alone", root, got)
		}
	}
	st := h.status("ws")
	if len(st.Instances) != 2 {
		t.Fatalf("instances = %+v, want one per root", st.Instances)
	}
	for _, in := range st.Instances {
		cwd, err := os.Readlink("/proc/" + strconv.Itoa(in.Pid) + "/cwd")
		if err != nil {
			t.Fatalf("cwd of %d: %v", in.Pid, err)
		}
		if cwd != in.Root || in.Instance != in.Root {
			t.Errorf("instance %q (root %q) runs in %q", in.Instance, in.Root, cwd)
		}
	}

	_, err := h.s.Call(WithScope(t.Context(), o.scope("app 1", "relative/dir")), "ws", toolCall("echo", nil), CallOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("relative root: %v", err)
	}
	_, err = h.s.Call(WithScope(t.Context(), o.scope("app 1", filepath.Join(r1, "missing"))), "ws", toolCall("echo", nil), CallOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("missing root: %v", err)
	}
	_, err = h.s.Call(WithScope(t.Context(), o.scope("app 1", "")), "ws", toolCall("echo", nil), CallOptions{})
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "--root") {
		t.Errorf("no root: %v", err)
	}
}

func TestMaxInstancesRefusesTheNext(t *testing.T) {
	spec := fakeSpec("capped", "legacy")
	spec.Share, spec.MaxInstances = ShareClient, 1
	h := newHarness(t, Options{Specs: []Spec{spec}, InstanceSweep: 10 * time.Millisecond}, nil)
	a, b := &owner{id: 1}, &owner{id: 2}
	echoIn(t, h, WithScope(t.Context(), a.scope("a", "")), "capped", "x")
	_, err := h.s.Call(WithScope(t.Context(), b.scope("b", "")), "capped", toolCall("echo", map[string]any{"message": "y"}), CallOptions{})
	if !errors.Is(err, ErrInstanceLimit) || !strings.Contains(err.Error(), "maxInstances of 1") || !strings.Contains(err.Error(), `"a"`) {
		t.Fatalf("second app: %v, want ErrInstanceLimit naming the cap and the holder", err)
	}
	a.closed.Store(true)
	waitFor(t, "the first instance to go", func() bool { return len(h.status("capped").Instances) == 0 })
	echoIn(t, h, WithScope(t.Context(), b.scope("b", "")), "capped", "y")
}

func TestSharedStopRemovesInstances(t *testing.T) {
	spec := fakeSpec("st", "legacy")
	spec.Share = ShareClient
	spec.IdleTimeout = time.Hour // owners gone or not, only Stop removes them here
	h := newHarness(t, Options{Specs: []Spec{spec}, InstanceSweep: 10 * time.Millisecond}, nil)
	ctx := WithScope(t.Context(), (&owner{id: 1}).scope("a", ""))
	echoIn(t, h, ctx, "st", "x")
	pid := h.status("st").Instances[0].Pid
	if _, err := h.s.Stop(t.Context(), "st"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if !pidGone(pid) || len(h.status("st").Instances) != 0 {
		t.Fatalf("after Stop: pid %d gone %v, instances %+v", pid, pidGone(pid), h.status("st").Instances)
	}
	if _, err := h.s.Call(ctx, "st", toolCall("echo", nil), CallOptions{}); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "mcpdctl start st") {
		t.Errorf("call after Stop: %v", err)
	}
	if _, err := h.s.Start(t.Context(), "st"); err != nil {
		t.Fatalf("Start: %v", err)
	}
	echoIn(t, h, ctx, "st", "back")
	if _, err := h.s.Restart(t.Context(), "st"); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if st := h.status("st"); len(st.Instances) != 1 || st.Instances[0].Restarts != 1 {
		t.Errorf("after Restart: %+v", st.Instances)
	}
}

func TestReloadSettingsKeepInstances(t *testing.T) {
	spec := fakeSpec("rl", "legacy")
	spec.Share = ShareClient
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	ctx := WithScope(t.Context(), (&owner{id: 1}).scope("a", ""))
	echoIn(t, h, ctx, "rl", "x")
	pid := h.status("rl").Instances[0].Pid

	// Settings alone: the instance keeps its child and takes them.
	spec.RequestTimeout = 5 * time.Second
	spec.MaxInstances = 3
	if res, err := h.s.Apply([]Spec{spec}); err != nil || len(res.Updated) != 1 {
		t.Fatalf("Apply settings: %+v, %v", res, err)
	}
	echoIn(t, h, ctx, "rl", "y")
	st := h.status("rl")
	if len(st.Instances) != 1 || st.Instances[0].Pid != pid {
		t.Fatalf("after a settings reload: %+v, want the instance of pid %d kept", st.Instances, pid)
	}
	if got := h.s.instancesOf("rl")[0].currentSpec(); got.RequestTimeout != 5*time.Second || got.MaxInstances != 3 {
		t.Errorf("instance spec after the reload: requestTimeout %v, maxInstances %d", got.RequestTimeout, got.MaxInstances)
	}
	if got := callsOf(t, h, ctx, "rl"); got != 3 {
		t.Errorf("kept instance saw %d calls, want 3 (state kept across the reload)", got)
	}

	// Identity: the instance is replaced.
	spec.Env["EXTRA"] = "1"
	if res, err := h.s.Apply([]Spec{spec}); err != nil || len(res.Restarted) != 1 {
		t.Fatalf("Apply identity: %+v, %v", res, err)
	}
	waitFor(t, "the old instance's child to go", func() bool { return pidGone(pid) })
	echoIn(t, h, ctx, "rl", "z")
	if st := h.status("rl"); len(st.Instances) != 1 || st.Instances[0].Pid == pid {
		t.Errorf("after an identity reload: %+v", st.Instances)
	}
}

func TestReloadDisableDropsInstances(t *testing.T) {
	spec := fakeSpec("rd", "legacy")
	spec.Share = ShareClient
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	ctx := WithScope(t.Context(), (&owner{id: 1}).scope("a", ""))
	echoIn(t, h, ctx, "rd", "x")
	pid := h.status("rd").Instances[0].Pid
	spec.Disabled = true
	if _, err := h.s.Apply([]Spec{spec}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the disabled server's instance to go", func() bool { return pidGone(pid) })
	if st := h.status("rd"); len(st.Instances) != 0 {
		t.Errorf("after disabling: %+v", st.Instances)
	}
}
