package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

const taskStatus = "notifications/tasks/status"

// A legacy server's notifications/tasks/status reaches the host that
// started the task, with the task id the host was given, through the
// aggregate and the per-server doors (stdio bridge and HTTP); a host that
// started no task is sent none.
func TestTaskStatusReachesItsHost(t *testing.T) {
	d, base := startHTTPDaemon(t, extServers())
	bystander := newLegacyBridgeHost(t, d, `{}`, "--all")
	for _, tc := range []struct{ name, prefix, arg string }{{"bridge all", "beta__", "--all"}, {"bridge", "", "beta"}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newLegacyBridgeHost(t, d, `{}`, tc.arg)
			res, _ := h.call(t, "tools/call", `{"name":"`+tc.prefix+`start_task","arguments":{},"task":{"ttl":60000}}`)
			id := startedTask(t, res)
			h.id++
			want := fmt.Sprint(h.id)
			h.h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%stask_status","arguments":{"taskId":%q}}}`, h.id, tc.prefix, id))
			var answered, told bool
			for !answered || !told {
				m := h.h.next(t)
				switch {
				case m.Method == taskStatus:
					checkStatus(t, m.Params, id)
					told = true
				case string(m.ID) == want:
					if m.Error != nil || !strings.Contains(string(m.Result), "set") {
						t.Fatalf("task_status = %s %v", m.Result, m.Error)
					}
					answered = true
				}
			}
			// A status the server sends before its CreateTaskResult
			// reaches the host too, whichever arrives first.
			h.id++
			want = fmt.Sprint(h.id)
			h.h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%sstart_task","arguments":{"notify":true},"task":{"ttl":60000}}}`, h.id, tc.prefix))
			var early json.RawMessage
			id = ""
			for id == "" || early == nil {
				m := h.h.next(t)
				switch {
				case m.Method == taskStatus:
					early = m.Params
				case string(m.ID) == want:
					id = startedTask(t, string(m.Result))
				}
			}
			var p struct{ TaskID, Status string }
			if json.Unmarshal(early, &p) != nil || p.TaskID != id || p.Status != "working" {
				t.Errorf("early status %s, want task %s working", early, id)
			}
		})
	}
	for _, path := range []string{"/mcp", "/servers/beta/mcp"} {
		t.Run("http "+path, func(t *testing.T) {
			url, prefix := base+path, ""
			if path == "/mcp" {
				prefix = "beta__"
			}
			sid := legacySession(t, url)
			post := func(body string) string {
				status, _, out := rawPost(t, url, body, "Mcp-Session-Id", sid)
				if msgs := sseMessages(out); len(msgs) > 0 {
					out = msgs[len(msgs)-1]
				}
				if status != http.StatusOK {
					t.Fatalf("%s = %d %s", body, status, out)
				}
				return out
			}
			var reply struct{ Result json.RawMessage }
			_ = json.Unmarshal([]byte(post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+prefix+`start_task","arguments":{},"task":{"ttl":60000}}}`)), &reply)
			id := startedTask(t, string(reply.Result))
			post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"` + prefix + `task_status","arguments":{"taskId":"` + id + `"}}}`)
			ctx, cancel := context.WithTimeout(ctxT(t), 30*time.Second)
			defer cancel()
			for m := range getStream(t, ctx, url, sid) {
				if string(m["method"]) == `"`+taskStatus+`"` {
					checkStatus(t, m["params"], id)
					return
				}
			}
			t.Fatal("the GET stream ended without the task's status")
		})
	}
	// The bystander reads up to the answer of its own request: none of the
	// statuses of the others' tasks is among what it was sent.
	bystander.h.send(t, `{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	for {
		m := bystander.h.next(t)
		if m.Method == taskStatus {
			t.Fatalf("the bystander was sent %s", m.Params)
		}
		if string(m.ID) == `"last"` {
			break
		}
	}
}

// startedTask is the task id of a CreateTaskResult.
func startedTask(t *testing.T, res string) string {
	t.Helper()
	var v struct {
		Task struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal([]byte(res), &v) != nil || v.Task.TaskID == "" {
		t.Fatalf("start_task = %s: no task", res)
	}
	return v.Task.TaskID
}

// checkStatus checks a task status notification's params: the task id,
// and the status the fake's task_status set.
func checkStatus(t *testing.T, params json.RawMessage, id string) {
	t.Helper()
	var p struct{ TaskID, Status string }
	if json.Unmarshal(params, &p) != nil || p.TaskID != id || p.Status != "cancelled" {
		t.Errorf("task status %s, want task %s cancelled", params, id)
	}
}
