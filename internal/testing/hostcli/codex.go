package hostcli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// listCodex asks `codex app-server` (JSON-RPC, one message a line on
// stdio) for the status of every configured MCP server: initialize,
// initialized, then mcpServerStatus/list, page by page. Closing its stdin
// ends it. The raw output is the responses and notifications it wrote,
// then its stderr.
func listCodex(ctx context.Context, r *Runner, home, workdir string) (map[string]Status, string, error) {
	marker := newMarker()
	cmd := newCmd(r, home, workdir, marker, "app-server")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	errf, err := os.CreateTemp("", "hostcli-err-")
	if err != nil {
		return nil, "", err
	}
	defer os.Remove(errf.Name())
	defer errf.Close()
	cmd.Stderr = errf
	if err := startInGroup(cmd); err != nil {
		return nil, "", err
	}
	defer reap(cmd.Process.Pid, marker, workdir)

	var (
		mu  sync.Mutex
		raw strings.Builder
	)
	type msg struct {
		ID     *int            `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	replies := make(chan msg, 16)
	go func() {
		defer close(replies)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			mu.Lock()
			raw.Write(sc.Bytes())
			raw.WriteByte('\n')
			mu.Unlock()
			var m msg
			if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
				replies <- m
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	output := func() string {
		mu.Lock()
		defer mu.Unlock()
		b, _ := os.ReadFile(errf.Name())
		return raw.String() + string(b)
	}
	id := 0
	call := func(method string, params any) (json.RawMessage, error) {
		id++
		b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
		if _, err := stdin.Write(append(b, '\n')); err != nil {
			return nil, fmt.Errorf("codex app-server: %s: %w", method, err)
		}
		for {
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("codex app-server: %s: %w", method, ctx.Err())
			case m, ok := <-replies:
				if !ok {
					return nil, fmt.Errorf("codex app-server: %s: it exited", method)
				}
				if *m.ID != id {
					continue
				}
				if m.Error != nil {
					return nil, fmt.Errorf("codex app-server: %s: %d %s", method, m.Error.Code, m.Error.Message)
				}
				return m.Result, nil
			}
		}
	}
	// finish closes stdin, which ends app-server, and gives it 5 s to exit
	// before its group is killed; how it exits does not matter.
	finish := func(err error) (map[string]Status, string, error) {
		_ = stdin.Close()
		wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = waitCtx(wctx, cmd)
		return nil, output(), err
	}

	if _, err := call("initialize", map[string]any{
		"clientInfo": map[string]string{"name": "mcpd-hostcli", "version": "0"},
	}); err != nil {
		return finish(err)
	}
	b, _ := json.Marshal(map[string]any{"method": "initialized"})
	if _, err := stdin.Write(append(b, '\n')); err != nil {
		return finish(err)
	}
	out := map[string]Status{}
	var cursor *string
	for {
		res, err := call("mcpServerStatus/list", map[string]any{"detail": "toolsAndAuthOnly", "cursor": cursor})
		if err != nil {
			_, text, _ := finish(nil)
			return out, text, err
		}
		var page struct {
			Data []struct {
				Name          string          `json:"name"`
				ServerInfo    json.RawMessage `json:"serverInfo"`
				ToolsError    *string         `json:"toolsError"`
				RuntimeStatus *string         `json:"runtimeStatus"`
				AuthStatus    string          `json:"authStatus"`
				Tools         map[string]any  `json:"tools"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := json.Unmarshal(res, &page); err != nil {
			_, text, _ := finish(nil)
			return out, text, fmt.Errorf("codex app-server: mcpServerStatus/list: %w", err)
		}
		for _, s := range page.Data {
			switch {
			case s.ToolsError != nil:
				out[s.Name] = Status{State: Failed, Text: *s.ToolsError}
			case len(s.ServerInfo) > 0 && string(s.ServerInfo) != "null":
				out[s.Name] = Status{State: Connected, Text: fmt.Sprintf("connected (%d tools)", len(s.Tools)),
					Tools: slices.Sorted(maps.Keys(s.Tools))}
			case s.RuntimeStatus != nil:
				out[s.Name] = Status{State: classify(*s.RuntimeStatus), Text: *s.RuntimeStatus}
			default:
				out[s.Name] = Status{State: Other, Text: "auth " + s.AuthStatus}
			}
		}
		if page.NextCursor == nil || *page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	_, text, _ := finish(nil)
	return out, text, nil
}
