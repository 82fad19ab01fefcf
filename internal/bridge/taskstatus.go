package bridge

import (
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// A legacy (2025-11-25) server's notifications/tasks/status reach mcpd as
// its Subscribe stream's task-status events, every task of the server's.
// The bridge passes on those of the tasks its host was given (a call's
// CreateTaskResult, a tasks/list), in the aggregate as well as for one
// server: task ids stay the server's (extensions.go), so the notification
// goes as the server sent it, and no host is told of another's task. A
// status the server sends before its CreateTaskResult reached the bridge
// is of a task the host does not know yet, and is not passed on; the host
// learns it with tasks/get. A modern host is sent none (its tasks
// extension has no such notification here).

// deliverTaskStatus passes on one task-status event (see above).
func (b *bridge) deliverTaskStatus(ev *mcpdv1.SubscriptionEvent) {
	params := json.RawMessage(ev.GetParamsJson())
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return
	}
	b.mu.Lock()
	legacy := b.initialized
	owner, known := b.taskIDs[p.TaskID]
	b.mu.Unlock()
	if !legacy || !known || owner != ev.GetServer() {
		return
	}
	b.write(&jsonrpc.Message{Method: "notifications/tasks/status", Params: params})
}

// noteTaskList records the tasks a server's tasks/list result names as
// known to the host.
func (b *bridge) noteTaskList(server string, res json.RawMessage) {
	var l struct {
		Tasks []struct {
			TaskID string `json:"taskId"`
		} `json:"tasks"`
	}
	if json.Unmarshal(res, &l) != nil {
		return
	}
	for _, t := range l.Tasks {
		if t.TaskID != "" {
			b.rememberTask(t.TaskID, server)
		}
	}
}
