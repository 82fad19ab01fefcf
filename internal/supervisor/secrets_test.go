package supervisor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// fakeSecrets is a SecretSource over a map; err, if set, is every Get's.
type fakeSecrets struct {
	vals map[string]string
	err  error
}

func (f fakeSecrets) Get(_ context.Context, name string) (string, error) {
	if f.err != nil {
		return "", f.err
	}
	v, ok := f.vals[name]
	if !ok {
		return "", fmt.Errorf("secret %s not found (mcpdctl secret set %s)", name, name)
	}
	return v, nil
}

// TestSecretsResolvedAtStart: ${secret:NAME} in env and args reaches the
// child (its /proc environ and cmdline) resolved, while the spec, status
// and every log entry, debug included, keep the reference.
func TestSecretsResolvedAtStart(t *testing.T) {
	const envVal, argVal = "env-secret-value-31", "arg-secret-value-47"
	core, logs := observer.New(zapcore.DebugLevel)
	spec := fakeSpec("sec", "modern")
	spec.Env["API_TOKEN"] = "Bearer ${secret:TOKEN}"
	spec.Args = append(spec.Args, "--x=${secret:ARG}")
	h := newHarness(t, Options{Specs: []Spec{spec}, Logger: zap.New(core),
		Secrets: fakeSecrets{vals: map[string]string{"TOKEN": envVal, "ARG": argVal}}}, nil)
	h.mustEcho("sec", "hi")
	st := h.status("sec")
	environ, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", st.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(environ), "\x00API_TOKEN=Bearer "+envVal+"\x00") {
		t.Errorf("the child's environment has no API_TOKEN=Bearer <value>")
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", st.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(cmdline), "\x00--x="+argVal) {
		t.Errorf("the child's command line has no --x=<value>: %q", cmdline)
	}
	if !strings.Contains(st.Command, "--x=${secret:ARG}") {
		t.Errorf("status command %q", st.Command)
	}
	h.stop()
	for _, e := range logs.All() {
		line := e.Message + " " + fmt.Sprint(e.ContextMap())
		if strings.Contains(line, envVal) || strings.Contains(line, argVal) {
			t.Errorf("%s entry carries a secret value: %s", e.Level, line)
		}
	}
}

// TestSecretErrorFailsTheServer: a missing secret, or a locked keyring,
// fails that server's start for good (no crash loop, no retry), saying
// which secret and what to do; the other servers run.
func TestSecretErrorFailsTheServer(t *testing.T) {
	missing := fakeSpec("missing", "modern")
	missing.Env["T"] = "${secret:NOPE}"
	h := newHarness(t, Options{Specs: []Spec{missing, fakeSpec("plain", "modern")},
		Secrets: fakeSecrets{vals: map[string]string{}}, BackoffMin: time.Millisecond}, nil)
	_, err := h.echo("missing", "hi")
	want := `start "missing": secret NOPE not found (mcpdctl secret set NOPE); fix it, then run: mcpdctl restart missing`
	if err == nil || err.Error() != want {
		t.Fatalf("call: %v\nwant %s", err, want)
	}
	if st := h.status("missing"); st.State != StateFailed || st.Restarts != 0 {
		t.Errorf("state %s, restarts %d", st.State, st.Restarts)
	}
	h.mustEcho("plain", "ok")
	h.stop()

	locked := fakeSpec("locked", "modern")
	locked.Env["T"] = "${secret:K}"
	h = newHarness(t, Options{Specs: []Spec{locked},
		Secrets: fakeSecrets{err: errors.New("secret K: the keyring is locked (unlock your keyring)")}}, nil)
	_, err = h.echo("locked", "hi")
	if err == nil || !strings.Contains(err.Error(), `start "locked": secret K: the keyring is locked (unlock your keyring)`) {
		t.Errorf("call: %v", err)
	}
	h.stop()

	// No secret store at all (a Supervisor built without one).
	h = newHarness(t, Options{Specs: []Spec{locked}}, nil)
	if _, err = h.echo("locked", "hi"); err == nil || !strings.Contains(err.Error(), "secret K: this mcpd has no secret store") {
		t.Errorf("call: %v", err)
	}
	h.stop()
}
