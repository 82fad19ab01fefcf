package bridge

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// A legacy (2025-11-25) server's notifications/tasks/status reach mcpd as
// its Subscribe stream's task-status events, every task of the server's.
// The bridge passes on those of the tasks its host was given (a call's
// CreateTaskResult, a tasks/list), in the aggregate as well as for one
// server: task ids stay the server's (extensions.go), so the notification
// goes as the server sent it, and no host is told of another's task. A
// status may come before the CreateTaskResult of its task (the two travel
// apart through mcpd): the latest statuses of ids the bridge does not know
// are kept, a few, and passed on when a call of the host returns their
// task. A modern (2026-07-28) host is sent the statuses of the tasks it
// names in a subscriptions/listen filter's taskIds, tagged with that
// listen's subscription id, and only of tasks it was given. A 2026-07-28
// server sends the statuses of the tasks its listen names only: the
// bridge asks mcpd to watch each named task it knows the server of, as
// the resource URI mcpd-task:SERVER/TASKID (subscriptions.TaskURI), which
// mcpd puts in its own listen's taskIds on that server.

// maxStrayStatus bounds the statuses kept for ids not known yet.
const maxStrayStatus = 32

// strayStatus is a task status of an id not known (yet).
type strayStatus struct {
	server, id string
	params     json.RawMessage
}

// deliverTaskStatus passes on one task-status event (see above).
func (b *bridge) deliverTaskStatus(ev *service.SubscriptionEvent) {
	params := ev.Params
	var p struct {
		TaskID string `json:"taskId"`
	}
	if json.Unmarshal(params, &p) != nil || p.TaskID == "" {
		return
	}
	b.statusMu.Lock()
	defer b.statusMu.Unlock()
	b.mu.Lock()
	legacy := b.initialized
	owner, known := b.taskIDs[p.TaskID]
	if legacy && !known {
		if len(b.strayStatus) >= maxStrayStatus {
			b.strayStatus = slices.Delete(b.strayStatus, 0, 1)
		}
		b.strayStatus = append(b.strayStatus, strayStatus{server: ev.Server, id: p.TaskID, params: params})
	}
	var tagged []json.RawMessage
	for _, l := range b.subs.listens {
		if l.tasks[p.TaskID] {
			tagged = append(tagged, l.id)
		}
	}
	b.mu.Unlock()
	if !known || owner != ev.Server {
		return
	}
	if legacy {
		b.write(&jsonrpc.Message{Method: "notifications/tasks/status", Params: params})
		return
	}
	for _, id := range tagged {
		b.notify(id, "notifications/tasks/status", withSubscriptionID(params, id))
	}
}

// withSubscriptionID is params with _meta's subscription id set to id:
// "Every notification on the stream carries
// _meta[io.modelcontextprotocol/subscriptionId]".
func withSubscriptionID(params json.RawMessage, id json.RawMessage) map[string]any {
	p := map[string]any{}
	_ = json.Unmarshal(params, &p)
	meta, _ := p["_meta"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	meta[jsonrpc.MetaSubscriptionID] = id
	p["_meta"] = meta
	return p
}

// taskScheme starts the URI under which mcpd watches a task's statuses
// (subscriptions.TaskURI).
const taskScheme = "mcpd-task:"

// taskURIsLocked is what mcpd is asked to watch for the task ids of a
// listen: the URI of each one the bridge knows the server of. b.mu must be
// held.
func (b *bridge) taskURIsLocked(ids map[string]bool) []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		if server, ok := b.taskIDs[id]; ok {
			out = append(out, taskScheme+server+"/"+id)
		}
	}
	return out
}

// listenTasks is the set of task ids a listen asked for, none when the
// bridge serves no tasks.
func listenTasks(ids []string, tasks bool) map[string]bool {
	out := map[string]bool{}
	if !tasks {
		return out
	}
	for _, id := range ids {
		if id != "" {
			out[id] = true
		}
	}
	return out
}

// declaresTasks reports whether caps declare tasks: 2025-11-25's tasks
// capability or the tasks extension.
func declaresTasks(caps map[string]any) bool {
	if _, ok := caps["tasks"]; ok {
		return true
	}
	exts, _ := caps["extensions"].(map[string]any)
	_, ok := exts[extTasks]
	return ok
}

// newTask records the task a call of the host just returned, and passes on
// the statuses kept of it (see above), in the order they came.
func (b *bridge) newTask(server, id string) {
	b.statusMu.Lock()
	defer b.statusMu.Unlock()
	b.rememberTask(id, server)
	var out []json.RawMessage
	b.mu.Lock()
	b.strayStatus = slices.DeleteFunc(b.strayStatus, func(s strayStatus) bool {
		if s.server == server && s.id == id {
			out = append(out, s.params)
			return true
		}
		return false
	})
	b.mu.Unlock()
	for _, p := range out {
		b.write(&jsonrpc.Message{Method: "notifications/tasks/status", Params: p})
	}
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
