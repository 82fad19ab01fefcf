package fakemcp_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// httpFake starts a fake of mode serving HTTP and returns its /mcp URL.
func httpFake(t *testing.T, mode string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	path, args := fakemcp.Command()
	cmd := exec.Command(path, args...)
	cmd.Env = fakemcp.Env(mode, fakemcp.EnvHTTP+"="+addr)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := "http://" + addr + "/mcp"
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			return url
		}
		if time.Now().After(deadline) {
			t.Fatalf("the fake does not answer at %s", url)
		}
	}
}

// post sends one modern request with the standard headers (name is the
// Mcp-Name value, "" for none) and returns the HTTP status and the
// response's result or error.
func post(t *testing.T, url, method, name, params string, withExt bool) (int, map[string]json.RawMessage) {
	t.Helper()
	caps := `{}`
	if withExt {
		caps = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
	if params == "" {
		params = "{" + meta + "}"
	} else {
		params = params[:len(params)-1] + "," + meta + "}"
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var msg map[string]json.RawMessage
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatalf("%s: %v: %s", method, err, body)
	}
	if !bytes.Equal(msg["id"], []byte("7")) {
		t.Errorf("%s: id %s, want 7", method, msg["id"])
	}
	return resp.StatusCode, msg
}

func TestTaskSuiteHTTP(t *testing.T) {
	url := httpFake(t, "modern,tasksuite,quiet")

	_, msg := post(t, url, "tools/call", "slow_compute", `{"name":"slow_compute","arguments":{"seconds":0,"label":"x"}}`, true)
	var created struct {
		ResultType, TaskID, Status string
	}
	if err := json.Unmarshal(msg["result"], &created); err != nil || created.ResultType != "task" || created.TaskID == "" {
		t.Fatalf("slow_compute with the extension = %s, want a CreateTaskResult", msg["result"])
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, msg = post(t, url, "tasks/get", created.TaskID, `{"taskId":"`+created.TaskID+`"}`, true)
		if strings.Contains(string(msg["result"]), `"status":"completed"`) {
			if !strings.Contains(string(msg["result"]), "computed x") {
				t.Errorf("tasks/get = %s, want the result inlined", msg["result"])
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tasks/get = %s %s, never completed", msg["result"], msg["error"])
		}
	}

	if _, msg = post(t, url, "tools/call", "slow_compute", `{"name":"slow_compute","arguments":{"seconds":0}}`, false); !strings.Contains(string(msg["result"]), `"content"`) {
		t.Errorf("slow_compute without the extension = %s %s, want a sync result", msg["result"], msg["error"])
	}
	if status, msg := post(t, url, "tasks/get", created.TaskID, `{"taskId":"`+created.TaskID+`"}`, false); status != 400 || !strings.Contains(string(msg["error"]), "-32021") {
		t.Errorf("tasks/get without the extension = %d %s, want 400 -32021", status, msg["error"])
	}
	if status, msg := post(t, url, "tasks/get", "other", `{"taskId":"`+created.TaskID+`"}`, true); status != 400 || !strings.Contains(string(msg["error"]), "-32020") {
		t.Errorf("tasks/get with a foreign Mcp-Name = %d %s, want 400 -32020", status, msg["error"])
	}
	if _, msg := post(t, url, "tasks/get", "nope", `{"taskId":"nope"}`, true); !strings.Contains(string(msg["error"]), "-32602") {
		t.Errorf("tasks/get of an unknown task = %s, want -32602", msg["error"])
	}
}
