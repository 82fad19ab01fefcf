package compat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// supPeer is one real server run by the supervisor.
type supPeer struct {
	spec     supervisor.Spec
	era      session.Era
	echoTool string
	echoWant func(msg string) string
}

// TestSupervisorPeers runs the real servers under the supervisor: lazy
// start on first call, era negotiation, calls and lists from many goroutines
// at once, and a shutdown that leaves no process behind.
func TestSupervisorPeers(t *testing.T) {
	plain := func(m string) string { return m }
	ps := []supPeer{
		{spec: supervisor.Spec{Name: "gosdk", Command: gosdkBin, Protocol: session.ProtocolAuto}, era: session.EraModern, echoTool: "echo", echoWant: plain},
		{spec: supervisor.Spec{Name: "gosdk-legacy", Command: gosdkBin, Protocol: session.ProtocolLegacy}, era: session.EraLegacy, echoTool: "echo", echoWant: plain},
		{spec: supervisor.Spec{Name: "mcpgo", Command: mcpgoBin, Protocol: session.ProtocolAuto}, era: session.EraModern, echoTool: "echo", echoWant: plain},
	}
	if npmMissing == "" {
		ps = append(ps, supPeer{
			spec:     supervisor.Spec{Name: "everything", Command: nodeBin, Args: []string{filepath.Join(repoRoot, everythingJS), "stdio"}},
			era:      session.EraLegacy,
			echoTool: "echo",
			echoWant: func(m string) string { return "Echo: " + m },
		})
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("npm test servers unavailable in CI: %s", npmMissing)
	} else {
		t.Logf("without the npm servers: %s", npmMissing)
	}

	var specs []supervisor.Spec
	for _, p := range ps {
		p.spec.RequestTimeout = 30 * time.Second
		specs = append(specs, p.spec)
	}
	sup := supervisor.New(supervisor.Options{
		Specs:      specs,
		Logger:     zaptest.NewLogger(t),
		ClientInfo: json.RawMessage(`{"name":"mcpd-compat-test","version":"0.0.0"}`),
	})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- sup.Run(ctx) }()
	var pids []int
	stopped := false
	stopAll := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("Run: %v", err)
		}
		for _, pid := range pids {
			if err := syscall.Kill(-pid, 0); !errors.Is(err, syscall.ESRCH) {
				t.Errorf("process group %d still exists after Run returned (kill 0: %v)", pid, err)
				syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
	t.Cleanup(stopAll)

	callText := func(t *testing.T, server, tool, args string, onProgress func(json.RawMessage)) string {
		t.Helper()
		resp, err := sup.Call(ctx, server, &session.Request{
			Method:     "tools/call",
			Params:     json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s}`, tool, args)),
			OnProgress: onProgress,
		}, supervisor.CallOptions{})
		if err != nil {
			t.Fatalf("call %s %s: %v", server, tool, err)
		}
		if resp.Error != nil {
			t.Fatalf("call %s %s: child error %v", server, tool, resp.Error)
		}
		return firstText(t, resp.Result)
	}

	// Lazy start: nothing runs before the first call.
	for _, st := range sup.Status() {
		if st.Pid != 0 || st.State == supervisor.StateReady {
			t.Errorf("%s is %s (pid %d) before any call, want it not started", st.Name, st.State, st.Pid)
		}
	}

	for _, p := range ps {
		t.Run(p.spec.Name, func(t *testing.T) {
			if got := callText(t, p.spec.Name, p.echoTool, `{"message":"hi"}`, nil); got != p.echoWant("hi") {
				t.Errorf("echo = %q, want %q", got, p.echoWant("hi"))
			}
			st, err := sup.ServerStatus(p.spec.Name)
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			if st.State != supervisor.StateReady || st.Era != p.era || st.Pid == 0 {
				t.Errorf("status = state %s era %s pid %d, want ready %s with a pid", st.State, st.Era, st.Pid, p.era)
			}
			pids = append(pids, st.Pid)
			items, err := sup.List(ctx, p.spec.Name, "tools/list", nil, supervisor.CallOptions{})
			if err != nil {
				t.Fatalf("list tools: %v", err)
			}
			var tools []struct {
				Name string `json:"name"`
			}
			if err := json.Unmarshal(items, &tools); err != nil {
				t.Fatalf("tools/list items %s: %v", items, err)
			}
			var names []string
			for _, x := range tools {
				names = append(names, x.Name)
			}
			if !contains(names, p.echoTool) {
				t.Errorf("tools = %v, want %q among them", names, p.echoTool)
			}
		})
	}

	t.Run("progress", func(t *testing.T) {
		var mu sync.Mutex
		var tokens []string
		resp, err := sup.Call(ctx, "gosdk", &session.Request{
			Method: "tools/call",
			Params: json.RawMessage(`{"name":"progress","arguments":{"steps":2},"_meta":{"progressToken":"sup-token"}}`),
			OnProgress: func(params json.RawMessage) {
				var n struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				}
				if json.Unmarshal(params, &n) == nil {
					mu.Lock()
					tokens = append(tokens, string(n.ProgressToken))
					mu.Unlock()
				}
			},
		}, supervisor.CallOptions{})
		if err != nil || resp.Error != nil {
			t.Fatalf("progress call: %v %v", err, resp)
		}
		mu.Lock()
		defer mu.Unlock()
		if strings.Join(tokens, ",") != `"sup-token","sup-token"` {
			t.Errorf("progress tokens seen by the app = %v, want two \"sup-token\"", tokens)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make(chan error, 25*len(ps))
		for _, p := range ps {
			for i := range 25 {
				wg.Go(func() {
					msg := fmt.Sprintf("%s-%d", p.spec.Name, i)
					resp, err := sup.Call(ctx, p.spec.Name, &session.Request{
						Method: "tools/call",
						Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":{"message":%q}}`, p.echoTool, msg)),
					}, supervisor.CallOptions{})
					if err != nil {
						errs <- fmt.Errorf("%s: %w", msg, err)
						return
					}
					var r toolResult
					if resp.Error != nil || json.Unmarshal(resp.Result, &r) != nil || len(r.Content) == 0 || r.Content[0].Text != p.echoWant(msg) {
						errs <- fmt.Errorf("%s: got %s %v", msg, resp.Result, resp.Error)
					}
				})
			}
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})

	t.Run("shutdown", func(t *testing.T) {
		stopAll()
		if len(pids) != len(ps) {
			t.Errorf("saw %d pids, want %d", len(pids), len(ps))
		}
	})
}
