package supervisor

import (
	"context"
	"errors"
	"strings"
	"testing"
)

const problem = "env.T: ${T} is not set"

// TestInvalidSpecFailsOnlyItsServer: a server with Invalid set is failed
// with its reason from the start, never started, and its calls fail with
// ErrUnavailable naming the problem, while the others serve.
func TestInvalidSpecFailsOnlyItsServer(t *testing.T) {
	good := fakeSpec("good", "dual")
	good.Autostart = true
	bad := fakeSpec("bad", "dual")
	bad.Autostart = true
	bad.Invalid = problem
	h := newHarness(t, Options{Specs: []Spec{good, bad}}, nil)
	h.waitState("good", StateReady)
	h.mustEcho("good", "hi")
	st := h.waitState("bad", StateFailed)
	if want := `server "bad": config: ` + problem; st.LastError != want || st.Pid != 0 {
		t.Errorf("bad: last error %q pid %d, want %q and no process", st.LastError, st.Pid, want)
	}
	_, err := h.echo("bad", "x")
	var ce *ConfigError
	if !errors.Is(err, ErrUnavailable) || !errors.As(err, &ce) || !strings.Contains(err.Error(), problem) {
		t.Errorf("call to bad: %v, want ErrUnavailable with the config problem", err)
	}
	for _, op := range []func(context.Context, string) (Status, error){h.s.Start, h.s.Restart} {
		if _, err := op(t.Context(), "bad"); !errors.As(err, &ce) {
			t.Errorf("start of bad: %v, want the config problem", err)
		}
	}
	if n := h.count("bad", EventReady); n != 0 {
		t.Errorf("bad got ready %d times", n)
	}
}

// TestReloadInvalidatesAndRevalidates: a reload that breaks a running
// server's config stops its child and fails it with the reason; one that
// fixes it starts it again per its policy.
func TestReloadInvalidatesAndRevalidates(t *testing.T) {
	srv := fakeSpec("srv", "dual")
	srv.Autostart = true
	lazy := fakeSpec("lazy", "dual")
	h := newHarness(t, Options{Specs: []Spec{srv, lazy}}, nil)
	pid := h.waitState("srv", StateReady).Pid
	h.mustEcho("lazy", "started")

	badSrv, badLazy := srv, lazy
	badSrv.Invalid, badLazy.Invalid = problem, problem
	res := mustApply(t, h.s, badSrv, badLazy)
	if strings.Join(res.Restarted, ",") != "lazy,srv" {
		t.Errorf("Restarted = %v, want both", res.Restarted)
	}
	st := h.waitState("srv", StateFailed)
	if !strings.Contains(st.LastError, problem) {
		t.Errorf("srv last error %q, want the problem", st.LastError)
	}
	h.waitState("lazy", StateFailed)
	waitFor(t, "srv's child reaped", func() bool { return pidGone(pid) })
	if _, err := h.echo("srv", "x"); !strings.Contains(fmtErr(err), problem) {
		t.Errorf("call to invalid srv: %v", err)
	}

	mustApply(t, h.s, srv, lazy)
	if st := h.waitState("srv", StateReady); st.LastError != "" {
		t.Errorf("srv ready again with last error %q", st.LastError)
	}
	h.waitState("lazy", StateStopped) // no autostart: started by the next call
	h.mustEcho("lazy", "again")
}

// TestInvalidDisabledServer: a disabled server's problem shows as failed;
// fixed and still disabled, it is plainly stopped.
func TestInvalidDisabledServer(t *testing.T) {
	off := fakeSpec("off", "dual")
	off.Disabled, off.Invalid = true, problem
	h := newHarness(t, Options{Specs: []Spec{off}}, nil)
	h.waitState("off", StateFailed)
	off.Invalid = ""
	mustApply(t, h.s, off)
	h.waitState("off", StateStopped)
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
