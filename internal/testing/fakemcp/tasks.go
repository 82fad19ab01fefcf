package fakemcp

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The tasks flag declares tasks in both eras (2025-11-25's tasks
// capability with list and cancel, and extensions["io.modelcontextprotocol/tasks"])
// and lists the tool start_task, which always answers with a task: the
// legacy CreateTaskResult {"task": {...}} to a legacy client, {"resultType":
// "task", "taskId": ...} to a modern one (with "notify": true, a legacy
// client is first sent notifications/tasks/status of it, "working"). The task, id "<server name>-task-N",
// is completed at once with the text "task N of <server name>". A modern
// client is sent a task's notifications/tasks/status (task_status) on each
// subscriptions/listen whose filter's taskIds names it, tagged; a legacy
// one untagged. tasks/get,
// tasks/result, tasks/list (legacy), tasks/cancel and tasks/update (modern)
// are answered; an unknown task id is -32602.

// fakeTask is one task of the fake.
type fakeTask struct {
	id, text, status, created string
}

func (t *fakeTask) task() map[string]any {
	return map[string]any{"taskId": t.id, "status": t.status, "createdAt": t.created, "lastUpdatedAt": t.created, "ttl": 60000}
}

// taskCaps adds the tasks capability and extension to caps.
func taskCaps(caps map[string]any) map[string]any {
	out := maps.Clone(caps)
	out["tasks"] = map[string]any{"list": map[string]any{}, "cancel": map[string]any{}, "requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}}}
	exts, _ := out["extensions"].(map[string]any)
	exts = maps.Clone(exts)
	if exts == nil {
		exts = map[string]any{}
	}
	exts["io.modelcontextprotocol/tasks"] = map[string]any{}
	out["extensions"] = exts
	return out
}

// taskStatusDescription describes the tool task_status.
const taskStatusDescription = `sets the status of task "taskId" to "status" (default cancelled) and emits notifications/tasks/status with the task, before its own answer "set"; an unknown task answers "unknown task"`

// setTaskStatus is the tool task_status.
func (s *server) setTaskStatus(r *req) map[string]any {
	var args struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	}
	_ = json.Unmarshal(r.params["arguments"], &args)
	if args.Status == "" {
		args.Status = "cancelled"
	}
	s.mu.Lock()
	t := s.tasks[args.TaskID]
	var task map[string]any
	if t != nil {
		t.status = args.Status
		task = t.task()
	}
	s.mu.Unlock()
	if t == nil {
		return map[string]any{"content": []any{textContent("unknown task")}}
	}
	if s.flags["modern"] || r.modern {
		s.notifyListeners(args.TaskID, task)
	} else {
		s.notify("notifications/tasks/status", task)
	}
	return map[string]any{"content": []any{textContent("set")}}
}

// notifyListeners sends task's status, tagged, on every listen whose
// filter's taskIds names it (a modern client asks for them so).
func (s *server) notifyListeners(id string, task map[string]any) {
	// Under fanMu: every listen gets it, or none acknowledged after it.
	s.fanMu.RLock()
	defer s.fanMu.RUnlock()
	s.mu.Lock()
	var ids []string
	for lid, filter := range s.listens {
		var f struct {
			TaskIDs []string `json:"taskIds"`
		}
		if json.Unmarshal(filter, &f) == nil && slices.Contains(f.TaskIDs, id) {
			ids = append(ids, lid)
		}
	}
	s.mu.Unlock()
	sort.Strings(ids)
	for _, lid := range ids {
		p := maps.Clone(task)
		p["_meta"] = map[string]any{jsonrpc.MetaSubscriptionID: json.RawMessage(lid)}
		s.notify("notifications/tasks/status", p)
	}
}

// tasksRequest serves what the tasks flag adds; handled is false for any
// other request, and without the flag.
func (s *server) tasksRequest(r *req) (result map[string]any, rerr *jsonrpc.Error, handled bool) {
	if !s.flags["tasks"] {
		return nil, nil, false
	}
	if r.method == "tools/call" {
		var name string
		_ = json.Unmarshal(r.params["name"], &name)
		switch name {
		case "task_status":
			return s.setTaskStatus(r), nil, true
		case "start_task":
			return s.startTask(r), nil, true
		}
		return nil, nil, false
	}
	return s.taskMethod(r)
}

// startTask answers a call of start_task: a new task, completed at once
// but reported as working (modern: as the call's task result; legacy: in
// a task field, after its status notification if the arguments ask for
// one).
func (s *server) startTask(r *req) map[string]any {
	server, _ := s.info["name"].(string)
	s.mu.Lock()
	if s.tasks == nil {
		s.tasks = map[string]*fakeTask{}
	}
	n := len(s.tasks) + 1
	t := &fakeTask{id: fmt.Sprintf("%s-task-%d", server, n), text: fmt.Sprintf("task %d of %s", n, server),
		status: "completed", created: time.Now().UTC().Format(time.RFC3339)}
	s.tasks[t.id] = t
	s.mu.Unlock()
	if r.modern {
		res := t.task()
		delete(res, "ttl")
		res["ttlMs"] = 60000
		res["status"] = "working"
		res["resultType"] = "task"
		return res
	}
	w := t.task()
	w["status"] = "working"
	if strings.Contains(string(r.params["arguments"]), `"notify":true`) {
		// Its status first, as a server may send it before its answer.
		s.notify("notifications/tasks/status", w)
	}
	return map[string]any{"task": w}
}

// taskMethod serves the tasks/* methods on the tasks started; handled is
// false for any other method, and for tasks/list in the modern era.
func (s *server) taskMethod(r *req) (result map[string]any, rerr *jsonrpc.Error, handled bool) {
	var id string
	_ = json.Unmarshal(r.params["taskId"], &id)
	s.mu.Lock()
	t := s.tasks[id]
	var tasks []any
	for _, t := range s.tasks {
		tasks = append(tasks, t.task())
	}
	s.mu.Unlock()
	unknown := jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "Failed to retrieve task: Task not found: %q", id)
	switch r.method {
	case "tasks/list":
		if r.modern {
			return nil, nil, false
		}
		if tasks == nil {
			tasks = []any{}
		}
		return map[string]any{"tasks": tasks}, nil, true
	case "tasks/get":
		if t == nil {
			return nil, unknown, true
		}
		res := t.task()
		if r.modern {
			delete(res, "ttl")
			res["ttlMs"] = 60000
			res["result"] = map[string]any{"content": []any{textContent(t.text)}}
		}
		return res, nil, true
	case "tasks/result":
		if t == nil {
			return nil, unknown, true
		}
		return map[string]any{"content": []any{textContent(t.text)}}, nil, true
	case "tasks/cancel", "tasks/update":
		if t == nil {
			return nil, unknown, true
		}
		if r.method == "tasks/update" || r.modern {
			return map[string]any{}, nil, true
		}
		return t.task(), nil, true
	}
	return nil, nil, false
}
