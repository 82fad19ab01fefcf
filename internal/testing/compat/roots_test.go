package compat

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
)

// server-everything asks for roots/list 350 ms after initialized when the
// client declares roots. With no host app attached, mcpd answers it from
// the config: the server reports the roots it received, its
// get-roots-list tool lists them, and its stderr holds no "Failed to
// request roots" line (what it printed when mcpd answered -32601).
func TestEverythingGetsConfiguredRoots(t *testing.T) {
	requireNPM(t)
	dir := t.TempDir()
	for name, tc := range map[string]struct {
		paths []string
		note  string
		want  string
	}{
		"list":    {paths: []string{dir}, note: "Roots updated: 1 root(s)", want: "file://" + dir},
		"default": {note: "Roots updated: 0 root(s)", want: "no roots are currently configured"},
	} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var logs []string
			sup := supervisor.New(supervisor.Options{
				Specs: []supervisor.Spec{{Name: "everything", Command: nodeBin, Autostart: true,
					Args: []string{filepath.Join(repoRoot, everythingJS), "stdio"}, RootPaths: tc.paths,
					RequestTimeout: 30 * time.Second}},
				Logger:     zaptest.NewLogger(t),
				ClientInfo: json.RawMessage(`{"name":"mcpd-compat-test","version":"0.0.0"}`),
				OnNotification: func(server string, n session.Notification) {
					if n.Method == "notifications/message" {
						mu.Lock()
						logs = append(logs, string(n.Params))
						mu.Unlock()
					}
				},
			})
			ctx, cancel := context.WithCancel(context.Background())
			runErr := make(chan error, 1)
			go func() { runErr <- sup.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("Run: %v", err)
				}
			}()
			waitFor(t, "the server's roots notice", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return strings.Contains(strings.Join(logs, "\n"), tc.note)
			})
			resp, err := sup.Call(ctx, "everything", &session.Request{Method: "tools/call",
				Params: json.RawMessage(`{"name":"get-roots-list","arguments":{}}`)}, supervisor.CallOptions{})
			if err != nil || resp.Error != nil {
				t.Fatalf("get-roots-list: %v %v", err, resp.Error)
			}
			if got := firstText(t, resp.Result); !strings.Contains(got, tc.want) {
				t.Errorf("get-roots-list = %q, want it to contain %q", got, tc.want)
			}
			lines, err := sup.Logs("everything", 100)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range lines {
				if strings.Contains(l.Text, "Failed to request roots") {
					t.Errorf("stderr: %s", l.Text)
				}
			}
			if st, _ := sup.ServerStatus("everything"); st.LastError != "" {
				t.Errorf("last error = %q, want none", st.LastError)
			}
		})
	}
}
