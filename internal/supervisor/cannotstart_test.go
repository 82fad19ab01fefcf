package supervisor

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/transport"
)

// A command that cannot start never ran: the server is failed, not
// crash-looping, and the call's error says why, not "last exit: unknown".
func TestCannotStartFailsWithCause(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name   string
		spec   func(Spec) Spec
		causes []string
	}{
		{"missing cwd", func(s Spec) Spec { s.Cwd = missing; return s },
			[]string{"cannot start", "chdir " + missing, "no such file or directory"}},
		{"NUL in command", func(s Spec) Spec { s.Command += "\x00x"; return s },
			[]string{"cannot start", "NUL"}},
		{"argv too long", func(s Spec) Spec { s.Args = append(s.Args, strings.Repeat("a", 128<<10+1)); return s },
			[]string{"cannot start", "argument list too long"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := tt.spec(fakeSpec("x", "dual"))
			h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
			for i := range 2 { // the first call starts it, the second fails fast
				_, err := h.echo("x", "hi")
				if !errors.Is(err, ErrUnavailable) || !errors.Is(err, transport.ErrCannotStart) {
					t.Fatalf("call %d: %v, want unavailable wrapping ErrCannotStart", i+1, err)
				}
				for _, want := range append(tt.causes, `"x"`, "mcpdctl restart x") {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("call %d: error %q does not say %q", i+1, err, want)
					}
				}
				if strings.Contains(err.Error(), "crash-looping") {
					t.Errorf("call %d: error %q calls it a crash loop", i+1, err)
				}
			}
			st := h.status("x")
			if st.State != StateFailed || st.Restarts != 0 || !strings.Contains(st.LastError, tt.causes[1]) {
				t.Fatalf("status: state %s restarts %d last error %q", st.State, st.Restarts, st.LastError)
			}
			if got := h.count("x", EventFailed); got != 1 {
				t.Errorf("%d failed events, want 1", got)
			}
			if got := h.count("x", EventExited); got != 0 {
				t.Errorf("%d exited events, want 0: it never ran", got)
			}
		})
	}
}
