package supervisor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/subscriptions"
)

func TestCompareSpecs(t *testing.T) {
	base := Spec{Name: "a", Command: "x", Args: []string{"1"}, Env: map[string]string{"K": "v"}, Protocol: "auto"}
	tests := []struct {
		name   string
		change func(*Spec)
		want   SpecChange
	}{
		{"same", func(*Spec) {}, SpecUnchanged},
		{"auto is empty", func(s *Spec) { s.Protocol = "" }, SpecUnchanged},
		{"nil vs empty args", func(s *Spec) { s.Args = []string{"1"} }, SpecUnchanged},
		{"command", func(s *Spec) { s.Command = "y" }, SpecIdentity},
		{"args", func(s *Spec) { s.Args = []string{"2"} }, SpecIdentity},
		{"env", func(s *Spec) { s.Env = map[string]string{"K": "w"} }, SpecIdentity},
		{"cwd", func(s *Spec) { s.Cwd = "/" }, SpecIdentity},
		{"protocol", func(s *Spec) { s.Protocol = "legacy" }, SpecIdentity},
		{"timeout", func(s *Spec) { s.RequestTimeout = time.Second }, SpecSettings},
		{"cache", func(s *Spec) { s.Cache = "always" }, SpecSettings},
		{"restart", func(s *Spec) { s.Restart = RestartNever }, SpecSettings},
		{"autostart", func(s *Spec) { s.Autostart = true }, SpecSettings},
		{"disabled", func(s *Spec) { s.Disabled = true }, SpecSettings},
		{"sampling off", func(s *Spec) { off := false; s.Sampling = &off }, SpecIdentity},
		{"roots on is nil", func(s *Spec) { on := true; s.Roots = &on }, SpecUnchanged},
		{"invalid", func(s *Spec) { s.Invalid = "bad" }, SpecIdentity},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := base
			b.Args = append([]string(nil), base.Args...)
			tt.change(&b)
			if got := CompareSpecs(base, b); got != tt.want {
				t.Errorf("CompareSpecs = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestSetSpecCoversEveryField fails when Spec gains a field that setSpec
// (which copies field by field) does not install.
func TestSetSpecCoversEveryField(t *testing.T) {
	sv := &server{spec: Spec{Name: "n"}}
	var full Spec
	v := reflect.ValueOf(&full).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("x" + v.Type().Field(i).Name)
		case reflect.Bool:
			f.SetBool(true)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"a"}))
		case reflect.Map:
			f.Set(reflect.ValueOf(map[string]string{"k": "v"}))
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		default:
			t.Fatalf("field %s: kind %s not handled by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	sv.setSpec(full)
	want := full
	want.Name = "n"
	if diff := cmp.Diff(want, sv.spec); diff != "" {
		t.Errorf("setSpec missed fields (-want +got):\n%s", diff)
	}
}

func mustApply(t *testing.T, s *Supervisor, specs ...Spec) ApplyResult {
	t.Helper()
	res, err := s.Apply(specs)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return res
}

func TestApplyAddRemoveUnchanged(t *testing.T) {
	keep := fakeSpec("keep", "dual")
	keep.Autostart = true
	gone := fakeSpec("gone", "dual")
	gone.Autostart = true
	h := newHarness(t, Options{Specs: []Spec{keep, gone}}, nil)
	keepPid := h.waitState("keep", StateReady).Pid
	gonePid := h.waitState("gone", StateReady).Pid

	added := fakeSpec("added", "legacy")
	added.Autostart = true
	lazy := fakeSpec("lazy", "dual")
	res := mustApply(t, h.s, keep, added, lazy)
	want := ApplyResult{Added: []string{"added", "lazy"}, Removed: []string{"gone"}, Unchanged: []string{"keep"}}
	if diff := cmp.Diff(want, res); diff != "" {
		t.Errorf("ApplyResult (-want +got):\n%s", diff)
	}

	if _, err := h.s.ServerStatus("gone"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("removed server: ServerStatus err = %v, want ErrUnknownServer", err)
	}
	if _, err := h.echo("gone", "x"); !errors.Is(err, ErrUnknownServer) {
		t.Errorf("call on removed server: err = %v, want ErrUnknownServer", err)
	}
	waitFor(t, "removed server's child reaped", func() bool { return pidGone(gonePid) })

	h.waitState("added", StateReady) // autostart
	h.mustEcho("added", "new")
	if st := h.status("lazy"); st.State != StateStopped {
		t.Errorf("lazy added server state = %s, want stopped until first use", st.State)
	}
	h.mustEcho("lazy", "on demand")
	if st := h.status("keep"); st.Pid != keepPid || st.State != StateReady || st.Restarts != 0 {
		t.Errorf("untouched server: pid %d state %s restarts %d, want pid %d ready 0", st.Pid, st.State, st.Restarts, keepPid)
	}
	if got := h.s.Names(); !cmp.Equal(got, []string{"added", "keep", "lazy"}) {
		t.Errorf("Names = %v", got)
	}
}

func TestApplyRemoveLetsInFlightCallFinish(t *testing.T) {
	entered := make(chan struct{})
	release := make(chan struct{})
	opts := Options{
		Specs: []Spec{fakeSpec("srv", "legacy")},
		// The child's sampling request holds the tool call in flight until
		// the test releases it.
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			close(entered)
			<-release
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"released"},"model":"m"}`), nil
		},
	}
	h := newHarness(t, opts, nil)
	type result struct {
		resp *session.Response
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := h.s.Call(context.Background(), "srv", toolCall("sample", map[string]any{}), CallOptions{})
		done <- result{resp, err}
	}()
	<-entered
	pid := h.status("srv").Pid

	res := mustApply(t, h.s)
	if !cmp.Equal(res.Removed, []string{"srv"}) {
		t.Fatalf("Removed = %v", res.Removed)
	}
	if pidGone(pid) {
		t.Fatal("child stopped while a call was in flight")
	}
	close(release)
	r := <-done
	if r.err != nil {
		t.Fatalf("in-flight call failed: %v", r.err)
	}
	if got := text(t, r.resp); !strings.Contains(got, "released") {
		t.Errorf("in-flight call result = %q, want the sampling answer", got)
	}
	waitFor(t, "removed server's child reaped", func() bool { return pidGone(pid) })
}

func TestApplyRemoveDrainIsBounded(t *testing.T) {
	release := make(chan struct{})
	entered := make(chan struct{})
	opts := Options{
		Specs:        []Spec{fakeSpec("srv", "legacy")},
		DrainTimeout: time.Millisecond,
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil, &session.RPCError{Code: -32603, Message: "gone"}
		},
	}
	h := newHarness(t, opts, nil)
	defer close(release)
	done := make(chan error, 1)
	go func() {
		_, err := h.s.Call(context.Background(), "srv", toolCall("sample", map[string]any{}), CallOptions{})
		done <- err
	}()
	<-entered
	pid := h.status("srv").Pid
	mustApply(t, h.s)
	// The call never finishes by itself: the drain gives up and stops the
	// child, which fails the call with the reason.
	err := <-done
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "removed from the config") {
		t.Errorf("call err = %v, want unavailable: removed from the config", err)
	}
	waitFor(t, "child reaped", func() bool { return pidGone(pid) })
}

func TestApplySettingsOnlyKeepsProcess(t *testing.T) {
	spec := fakeSpec("srv", "dual")
	spec.Autostart = true
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	pid := h.waitState("srv", StateReady).Pid

	changed := spec
	changed.RequestTimeout = 50 * time.Millisecond
	changed.Cache = "never"
	changed.Restart = RestartAlways
	res := mustApply(t, h.s, changed)
	if !cmp.Equal(res.Updated, []string{"srv"}) || len(res.Restarted) != 0 {
		t.Fatalf("ApplyResult = %+v, want srv updated only", res)
	}
	// The new timeout applies at once (the loop took the command before
	// Apply returned), to the same process.
	_, err := h.s.Call(context.Background(), "srv", toolCall("sleep", map[string]any{"ms": 60000}), CallOptions{})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("call with the new 50ms timeout: err = %v, want deadline exceeded", err)
	}
	st := h.status("srv")
	if st.Pid != pid || st.Restarts != 0 {
		t.Errorf("after a settings change: pid %d restarts %d, want pid %d and no restart", st.Pid, st.Restarts, pid)
	}
	if got := h.s.Specs()[0]; got.RequestTimeout != changed.RequestTimeout || got.Cache != "never" || got.Restart != RestartAlways {
		t.Errorf("Specs()[0] = %+v, want the new settings", got)
	}
}

func TestApplyIdentityChangeRestartsAndResubscribes(t *testing.T) {
	spec := fakeSpec("srv", "legacy")
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)

	stream := h.subscribe("test", subscriptions.Watch{Servers: []string{"srv"}, ToolsListChanged: true, URIs: []string{"fake://hello"}})
	old := h.waitState("srv", StateReady)
	waitFor(t, "resources/subscribe on the first child", func() bool { return countStderr(h, "srv", old.Pid, "recv resources/subscribe") == 1 })

	changed := spec
	changed.Env = map[string]string{}
	for k, v := range spec.Env {
		changed.Env[k] = v
	}
	changed.Env["RELOADED"] = "1"
	res := mustApply(t, h.s, changed)
	if !cmp.Equal(res.Restarted, []string{"srv"}) {
		t.Fatalf("ApplyResult = %+v, want srv restarted", res)
	}
	var st Status
	waitFor(t, "a new child", func() bool {
		st = h.status("srv")
		return st.State == StateReady && st.Pid != old.Pid && st.Pid != 0
	})
	waitFor(t, "old child reaped", func() bool { return pidGone(old.Pid) })
	waitFor(t, "subscription re-sent to the new child", func() bool {
		return countStderr(h, "srv", st.Pid, "recv resources/subscribe") == 1
	})
	// The app hears that the server restarted.
	waitFor(t, "restarted event", func() bool {
		return tookEvent(stream, func(ev *subscriptions.Event) bool {
			return ev.Kind == subscriptions.KindRestarted && ev.Pid == st.Pid
		})
	})
	if !strings.Contains(h.status("srv").Command, spec.Command) {
		t.Errorf("command = %q", h.status("srv").Command)
	}
}

func TestApplyEnableDisable(t *testing.T) {
	spec := fakeSpec("srv", "dual")
	spec.Autostart = true
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	pid := h.waitState("srv", StateReady).Pid

	off := spec
	off.Disabled = true
	mustApply(t, h.s, off)
	waitFor(t, "disabled server's child reaped", func() bool { return pidGone(pid) })
	h.waitState("srv", StateStopped)
	if _, err := h.echo("srv", "x"); !errors.Is(err, ErrUnavailable) {
		t.Errorf("call on disabled server: %v, want unavailable", err)
	}
	mustApply(t, h.s, spec)
	st := h.waitState("srv", StateReady) // autostart again
	if st.Pid == pid {
		t.Errorf("re-enabled server kept pid %d", pid)
	}
}

func TestApplyFixesFailedServer(t *testing.T) {
	bad := Spec{Name: "srv", Command: "/nonexistent/mcp-server", Autostart: true}
	h := newHarness(t, Options{Specs: []Spec{bad}}, nil)
	h.waitState("srv", StateFailed)
	good := fakeSpec("srv", "dual")
	good.Autostart = true
	mustApply(t, h.s, good)
	h.waitState("srv", StateReady)
	h.mustEcho("srv", "fixed")
}

func TestApplyBeforeRun(t *testing.T) {
	s := New(Options{Specs: []Spec{fakeSpec("a", "dual")}})
	changed := fakeSpec("a", "dual")
	changed.RequestTimeout = time.Second
	res, err := s.Apply([]Spec{changed, fakeSpec("b", "dual")})
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(res.Added, []string{"b"}) || !cmp.Equal(res.Updated, []string{"a"}) {
		t.Errorf("ApplyResult = %+v", res)
	}
	if got := s.Specs(); len(got) != 2 || got[0].RequestTimeout != time.Second {
		t.Errorf("Specs = %+v", got)
	}
}

// countStderr counts the stderr lines of process pid of server containing s.
func countStderr(h *harness, server string, pid int, s string) int {
	lines, err := h.s.Logs(server, 1000)
	if err != nil {
		h.t.Fatal(err)
	}
	n := 0
	for _, l := range lines {
		if l.Pid == pid && strings.Contains(l.Text, s) {
			n++
		}
	}
	return n
}

// A follower of a server's log ends when a reload removes the server:
// there will be no more lines for it.
func TestFollowLogsEndsWhenServerRemoved(t *testing.T) {
	keep, gone := fakeSpec("keep", "dual"), fakeSpec("gone", "dual")
	h := newHarness(t, Options{Specs: []Spec{keep, gone}}, nil)
	h.mustEcho("gone", "hi")
	_, lines, cancel, err := h.s.FollowLogs("gone", 10)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	mustApply(t, h.s, keep)
	waitClosed(t, lines, "the follower of a removed server") // dormant_test.go
}
