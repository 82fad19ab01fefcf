package hostcli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
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

	c := &codexAppServer{cmd: cmd, stdin: stdin, errf: errf, replies: make(chan codexMsg, 16)}
	go c.read(stdout)
	if err := c.initialize(ctx); err != nil {
		return nil, c.finish(), err
	}
	out, err := c.listStatuses(ctx)
	return out, c.finish(), err
}

// codexAppServer is a running `codex app-server` and what it wrote.
type codexAppServer struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	errf    *os.File // its stderr
	replies chan codexMsg
	id      int // the last request's

	mu  sync.Mutex
	raw strings.Builder // its stdout
}

// codexMsg is a JSON-RPC response of app-server.
type codexMsg struct {
	ID     *int            `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// read keeps every line of stdout and passes the responses on to
// c.replies, closed when stdout ends.
func (c *codexAppServer) read(stdout io.Reader) {
	defer close(c.replies)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		c.mu.Lock()
		c.raw.Write(sc.Bytes())
		c.raw.WriteByte('\n')
		c.mu.Unlock()
		var m codexMsg
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.ID != nil {
			c.replies <- m
		}
	}
	_, _ = io.Copy(io.Discard, stdout)
}

// output is what app-server wrote so far: its stdout, then its stderr.
func (c *codexAppServer) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, _ := os.ReadFile(c.errf.Name())
	return c.raw.String() + string(b)
}

// call sends a request and waits for its response's result.
func (c *codexAppServer) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.id++
	b, _ := json.Marshal(map[string]any{"id": c.id, "method": method, "params": params})
	if _, err := c.stdin.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("codex app-server: %s: %w", method, err)
	}
	for {
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("codex app-server: %s: %w", method, ctx.Err())
		case m, ok := <-c.replies:
			if !ok {
				return nil, fmt.Errorf("codex app-server: %s: it exited", method)
			}
			if *m.ID != c.id {
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
// before its group is killed; how it exits does not matter. It returns
// app-server's output.
func (c *codexAppServer) finish() string {
	_ = c.stdin.Close()
	wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = waitCtx(wctx, c.cmd)
	return c.output()
}

// initialize is the handshake: initialize, then initialized.
func (c *codexAppServer) initialize(ctx context.Context) error {
	if _, err := c.call(ctx, "initialize", map[string]any{
		"clientInfo": map[string]string{"name": "mcpd-hostcli", "version": "0"},
	}); err != nil {
		return err
	}
	b, _ := json.Marshal(map[string]any{"method": "initialized"})
	_, err := c.stdin.Write(append(b, '\n'))
	return err
}

// codexStatusPage is a page of mcpServerStatus/list.
type codexStatusPage struct {
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

// listStatuses lists every server's status, page by page; on an error it
// returns the statuses of the pages before.
func (c *codexAppServer) listStatuses(ctx context.Context) (map[string]Status, error) {
	out := map[string]Status{}
	var cursor *string
	for {
		res, err := c.call(ctx, "mcpServerStatus/list", map[string]any{"detail": "toolsAndAuthOnly", "cursor": cursor})
		if err != nil {
			return out, err
		}
		var page codexStatusPage
		if err := json.Unmarshal(res, &page); err != nil {
			return out, fmt.Errorf("codex app-server: mcpServerStatus/list: %w", err)
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
			return out, nil
		}
		cursor = page.NextCursor
	}
}
