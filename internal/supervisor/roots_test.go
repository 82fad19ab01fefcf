package supervisor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// noHost is the OnRequest of a daemon with no host app that answers.
func noHost(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
	return nil, &session.RPCError{Code: jsonrpc.CodeMethodNotFound, Message: "no app connected to mcpd answers " + method}
}

// askRoots has the legacy fake child srv send roots/list to mcpd and
// returns the answer it got, as JSON text or "error <code>: <message>".
func askRoots(t *testing.T, h *harness) string {
	t.Helper()
	resp, err := h.s.Call(context.Background(), "srv", toolCall("roots", map[string]any{}), CallOptions{})
	if err != nil {
		t.Fatalf("call roots: %v", err)
	}
	return text(t, resp)
}

// A child's roots/list that no host answers gets the configured roots:
// file:// URIs named by the directory's base name, whether mcpd has no
// OnRequest at all or its hosts answer -32601 (none declares roots).
func TestRootsConfiguredAnswerWithoutHost(t *testing.T) {
	const want = `{"roots":[{"uri":"file:///srv/my%20work","name":"my work"},{"uri":"file:///data","name":"data"}]}`
	for name, on := range map[string]func(context.Context, string, string, json.RawMessage) (json.RawMessage, *session.RPCError){
		"no OnRequest":    nil,
		"no host answers": noHost,
	} {
		t.Run(name, func(t *testing.T) {
			spec := fakeSpec("srv", "legacy")
			spec.RootPaths = []string{"/srv/my work", "/data"}
			h := newHarness(t, Options{Specs: []Spec{spec}, OnRequest: on}, nil)
			if got := askRoots(t, h); got != want {
				t.Errorf("roots/list answer = %s, want %s", got, want)
			}
			if st := h.status("srv"); st.LastError != "" || st.State != StateReady {
				t.Errorf("status = %s, last error %q; want ready and none", st.State, st.LastError)
			}
		})
	}
}

// With roots on (the default) and no list, the answer is an empty list,
// never an error the child would log as its failure.
func TestRootsDefaultAnswersEmptyList(t *testing.T) {
	h := newHarness(t, Options{Specs: []Spec{fakeSpec("srv", "legacy")}, OnRequest: noHost}, nil)
	if got := askRoots(t, h); got != `{"roots":[]}` {
		t.Errorf("roots/list answer = %s, want {\"roots\":[]}", got)
	}
	if st := h.status("srv"); st.LastError != "" {
		t.Errorf("last error = %q, want none", st.LastError)
	}
}

// A host's answer wins over the configured roots, and so does a host's
// error other than -32601.
func TestRootsHostAnswerWins(t *testing.T) {
	spec := fakeSpec("srv", "legacy")
	spec.RootPaths = []string{"/configured"}
	h := newHarness(t, Options{Specs: []Spec{spec},
		OnRequest: func(ctx context.Context, server, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			if method == methodRootsList && server == "srv" {
				return json.RawMessage(`{"roots":[{"uri":"file:///host"}]}`), nil
			}
			return nil, &session.RPCError{Code: -32603, Message: "host failed"}
		}}, nil)
	if got := askRoots(t, h); got != `{"roots":[{"uri":"file:///host"}]}` {
		t.Errorf("roots/list answer = %s, want the host's", got)
	}
	if got := text(t, mustCall(t, h, "sample")); got != "error -32603: host failed" {
		t.Errorf("sampling answer = %q, want the host's error", got)
	}
}

// With "roots": false mcpd declares no roots capability, and a child that
// asks anyway gets -32601.
func TestRootsOffAnswersMethodNotFound(t *testing.T) {
	spec := fakeSpec("srv", "legacy")
	off := false
	spec.Roots = &off
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	if got := askRoots(t, h); !strings.HasPrefix(got, "error -32601") {
		t.Errorf("roots/list answer = %s, want -32601", got)
	}
}

// A reload that changes the configured roots keeps the child, tells it
// notifications/roots/list_changed, and its next roots/list gets the new
// list.
func TestRootsReloadAnnouncesChange(t *testing.T) {
	spec := fakeSpec("srv", "legacy")
	spec.RootPaths = []string{"/old"}
	h := newHarness(t, Options{Specs: []Spec{spec}}, nil)
	if got := askRoots(t, h); got != `{"roots":[{"uri":"file:///old","name":"old"}]}` {
		t.Fatalf("roots/list answer = %s", got)
	}
	pid := h.status("srv").Pid
	spec.RootPaths = []string{"/new"}
	if res := mustApply(t, h.s, spec); len(res.Updated) != 1 {
		t.Fatalf("Apply = %+v, want srv updated in place", res)
	}
	waitFor(t, "notifications/roots/list_changed at the child", func() bool {
		var st struct {
			Methods map[string]int `json:"methods"`
		}
		if err := json.Unmarshal([]byte(text(t, mustCall(t, h, "stats"))), &st); err != nil {
			t.Fatal(err)
		}
		return st.Methods["notifications/roots/list_changed"] == 1
	})
	if got := askRoots(t, h); got != `{"roots":[{"uri":"file:///new","name":"new"}]}` {
		t.Errorf("roots/list answer after reload = %s", got)
	}
	if got := h.status("srv").Pid; got != pid {
		t.Errorf("pid %d after reload, want %d (no restart)", got, pid)
	}
}

func mustCall(t *testing.T, h *harness, tool string) *session.Response {
	t.Helper()
	resp, err := h.s.Call(context.Background(), "srv", toolCall(tool, map[string]any{}), CallOptions{})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return resp
}
