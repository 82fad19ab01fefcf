package fakemcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"sort"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The tasksuite flag serves the tasks extension (SEP-2663,
// io.modelcontextprotocol/tasks) to modern clients, with the tools the
// conformance suite's tasks-* scenarios call:
//
//	greet               sync only: "Hello, {name}!"
//	slow_compute        optional task support: sleeps "seconds" (default 1),
//	                    then "computed {label} in {seconds}s"
//	failing_job         required: after "ms" (default 1000) ms a tool error
//	                    (completed, result.isError)
//	protocol_error_job  optional: after "ms" (default 200) ms a protocol error
//	                    (failed, error -32603)
//	confirm_delete      required: asks one elicitation/create (key
//	                    "confirm"), then "deleted {filename}" or "kept {filename}"
//	multi_input         required: asks two elicitation/create at once (keys
//	                    "first", "second"), completes when both are answered
//	test_tool_with_task required: without inputResponses an
//	                    InputRequiredResult asking "user_name"; with the
//	                    answer a task whose result is "Hello, {name}!"
//
// A task is created only when the request's clientCapabilities (per request,
// as every modern request carries them) declare the extension. Without it a
// task-optional tool runs synchronously, a task-required one and tasks/get,
// tasks/update and tasks/cancel answer -32021 naming the extension.
// tasks/result and tasks/list, removed from the extension, are -32601; an
// unknown task id is -32602. Tasks never expire. No notifications are sent.

// tasksExt is the tasks extension's identifier.
const tasksExt = "io.modelcontextprotocol/tasks"

// codeMissingClientCapability is MissingRequiredClientCapability.
const codeMissingClientCapability = -32021

// Task fields of every task the suite's tools create.
const (
	suiteTTL          = 600000
	suitePollInterval = 100
)

// suiteTool is a tool of the tasksuite flag.
type suiteTool struct {
	name, description string
	taskSupport       string // "" (sync only), "optional" or "required"
	schema            map[string]any
}

var suiteTools = []suiteTool{
	{"greet", "returns Hello, {name}!", "", objectSchema("name", "string")},
	{"slow_compute", "sleeps seconds, then returns a result", "optional", objectSchema("seconds", "number", "label", "string")},
	{"failing_job", "fails with a tool error after about a second", "required", objectSchema("ms", "integer")},
	{"protocol_error_job", "fails with a protocol error", "optional", objectSchema("ms", "integer")},
	{"confirm_delete", "asks for confirmation, then deletes filename", "required", objectSchema("filename", "string")},
	{"multi_input", "asks two questions at once", "required", objectSchema()},
	{"test_tool_with_task", "asks for user_name, then greets in a task", "required", objectSchema()},
}

func objectSchema(props ...string) map[string]any {
	p := map[string]any{}
	for i := 0; i+1 < len(props); i += 2 {
		p[props[i]] = map[string]any{"type": props[i+1]}
	}
	return map[string]any{"type": "object", "properties": p}
}

func suiteToolList() []map[string]any {
	var out []map[string]any
	for _, t := range suiteTools {
		m := map[string]any{"name": t.name, "description": t.description, "inputSchema": t.schema}
		if t.taskSupport != "" {
			m["execution"] = map[string]any{"taskSupport": t.taskSupport}
		}
		out = append(out, m)
	}
	return out
}

// suiteCaps adds the tasks extension (and no v1 tasks capability) to caps.
func suiteCaps(caps map[string]any) map[string]any {
	out := maps.Clone(caps)
	exts, _ := out["extensions"].(map[string]any)
	exts = maps.Clone(exts)
	if exts == nil {
		exts = map[string]any{}
	}
	exts[tasksExt] = map[string]any{}
	out["extensions"] = exts
	return out
}

// suiteTask is one task of the tasksuite flag. Its fields are guarded by
// server.mu.
type suiteTask struct {
	id               string
	status           string // working, input_required, completed, failed, cancelled
	created, updated time.Time
	result           map[string]any
	err              *jsonrpc.Error
	pending          map[string]any             // inputRequests not answered yet
	answers          map[string]json.RawMessage // inputResponses received
	cancel           context.CancelFunc
	wake             chan struct{} // a send when an update arrived; buffered 1
}

func (t *suiteTask) terminal() bool {
	return t.status == "completed" || t.status == "failed" || t.status == "cancelled"
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// envelope is the task's Task fields.
func (t *suiteTask) envelope() map[string]any {
	return map[string]any{"taskId": t.id, "status": t.status, "createdAt": isoTime(t.created),
		"lastUpdatedAt": isoTime(t.updated), "ttlMs": suiteTTL, "pollIntervalMs": suitePollInterval}
}

// detailed is the tasks/get answer: the envelope with the result, error
// or pending inputRequests its status calls for.
func (t *suiteTask) detailed() map[string]any {
	d := t.envelope()
	switch t.status {
	case "completed":
		d["result"] = maps.Clone(t.result)
	case "failed":
		d["error"] = t.err
	case "input_required":
		d["inputRequests"] = maps.Clone(t.pending)
	}
	return d
}

// hasTasksExt reports whether r's clientCapabilities declare the extension.
func hasTasksExt(r *req) bool {
	var caps struct {
		Extensions map[string]json.RawMessage `json:"extensions"`
	}
	if json.Unmarshal(r.meta[jsonrpc.MetaClientCapabilities], &caps) != nil {
		return false
	}
	v, ok := caps.Extensions[tasksExt]
	return ok && string(v) != "null"
}

func missingTasksExt(method string) *jsonrpc.Error {
	return jsonrpc.WithData(codeMissingClientCapability,
		fmt.Sprintf("%s requires the client capability extensions[%q]", method, tasksExt),
		map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExt: map[string]any{}}}})
}

func elicit(message string, props ...string) map[string]any {
	schema := objectSchema(props...)
	var req []string
	for i := 0; i < len(props); i += 2 {
		req = append(req, props[i])
	}
	schema["required"] = req
	return map[string]any{"method": "elicitation/create", "params": map[string]any{
		"mode": "form", "message": message, "requestedSchema": schema}}
}

// taskSuite serves what the tasksuite flag adds; handled is false for any
// other request, and without the flag.
func (s *server) taskSuite(r *req) (result map[string]any, rerr *jsonrpc.Error, handled bool) {
	if !s.flags["tasksuite"] || !r.modern {
		return nil, nil, false
	}
	switch r.method {
	case "tools/call":
		var name string
		_ = json.Unmarshal(r.params["name"], &name)
		for _, t := range suiteTools {
			if t.name == name {
				result, rerr = s.suiteCall(r, t)
				return result, rerr, true
			}
		}
		return nil, nil, false
	case "tasks/result", "tasks/list":
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %q (removed from the tasks extension)", r.method), true
	case "tasks/get", "tasks/update", "tasks/cancel":
	default:
		return nil, nil, false
	}
	if !hasTasksExt(r) {
		return nil, missingTasksExt(r.method), true
	}
	var id string
	_ = json.Unmarshal(r.params["taskId"], &id)
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.suiteTasks[id]
	if t == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown task %q", id), true
	}
	switch r.method {
	case "tasks/get":
		return t.detailed(), nil, true
	case "tasks/cancel":
		if !t.terminal() {
			t.status, t.updated = "cancelled", time.Now()
			t.cancel()
		}
		return map[string]any{}, nil, true
	}
	// tasks/update
	var responses map[string]json.RawMessage
	if raw := r.params["inputResponses"]; raw == nil || json.Unmarshal(raw, &responses) != nil || responses == nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "inputResponses must be an object"), true
	}
	answered := false
	for k, v := range responses {
		if _, ok := t.pending[k]; ok {
			delete(t.pending, k)
			t.answers[k] = v
			answered = true
		}
	}
	if answered && t.status == "input_required" {
		t.updated = time.Now()
		if len(t.pending) == 0 {
			t.status = "working"
		}
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
	return map[string]any{}, nil, true
}

// suiteCall runs tool t.
func (s *server) suiteCall(r *req, t suiteTool) (map[string]any, *jsonrpc.Error) {
	args := map[string]json.RawMessage{}
	if a := r.params["arguments"]; a != nil && json.Unmarshal(a, &args) != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "arguments must be an object")
	}
	ext := hasTasksExt(r)
	if t.taskSupport == "required" && !ext {
		return nil, missingTasksExt("tools/call " + t.name)
	}
	switch t.name {
	case "greet":
		name := argString(args, "name")
		if name == "" {
			name = "World"
		}
		return suiteText("Hello, " + name + "!"), nil
	case "slow_compute":
		return s.suiteSlowCompute(r, args, ext)
	case "failing_job":
		return s.suiteFailingJob(args), nil
	case "protocol_error_job":
		return s.suiteProtocolErrorJob(r, args, ext)
	case "confirm_delete":
		return s.suiteConfirmDelete(args), nil
	case "multi_input":
		return s.suiteMultiInput(), nil
	case "test_tool_with_task":
		return s.suiteToolWithTask(r), nil
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown tool %q", t.name)
}

// suiteText is a tool result of one text content.
func suiteText(s string) map[string]any { return map[string]any{"content": []any{textContent(s)}} }

// suiteSlowCompute runs slow_compute: a task when ext, else synchronously.
func (s *server) suiteSlowCompute(r *req, args map[string]json.RawMessage, ext bool) (map[string]any, *jsonrpc.Error) {
	secs := 1.0
	if v, ok := args["seconds"]; ok {
		_ = json.Unmarshal(v, &secs)
	}
	d := time.Duration(math.Max(secs, 0) * float64(time.Second))
	label := argString(args, "label")
	done := suiteText(fmt.Sprintf("computed %s in %gs", label, secs))
	if !ext {
		if !wait(r, int(d/time.Millisecond)) {
			return nil, errNoReply
		}
		return done, nil
	}
	return s.startSuiteTask(nil, func(ctx context.Context, _ *suiteTask) (map[string]any, *jsonrpc.Error) {
		if !sleepCtx(ctx, d) {
			return nil, nil
		}
		return done, nil
	}), nil
}

// suiteFailingJob starts failing_job's task, which ends in a tool error.
func (s *server) suiteFailingJob(args map[string]json.RawMessage) map[string]any {
	d := time.Duration(argInt(args, "ms", 1000)) * time.Millisecond
	return s.startSuiteTask(nil, func(ctx context.Context, _ *suiteTask) (map[string]any, *jsonrpc.Error) {
		if !sleepCtx(ctx, d) {
			return nil, nil
		}
		res := suiteText("failing_job: the job failed")
		res["isError"] = true
		return res, nil
	})
}

// suiteProtocolErrorJob runs protocol_error_job, which ends in a protocol
// error: a task when ext, else synchronously.
func (s *server) suiteProtocolErrorJob(r *req, args map[string]json.RawMessage, ext bool) (map[string]any, *jsonrpc.Error) {
	d := time.Duration(argInt(args, "ms", 200)) * time.Millisecond
	fail := jsonrpc.Errorf(jsonrpc.CodeInternalError, "protocol_error_job: internal error")
	if !ext {
		if !wait(r, int(d/time.Millisecond)) {
			return nil, errNoReply
		}
		return nil, fail
	}
	return s.startSuiteTask(nil, func(ctx context.Context, _ *suiteTask) (map[string]any, *jsonrpc.Error) {
		if !sleepCtx(ctx, d) {
			return nil, nil
		}
		return nil, fail
	}), nil
}

// suiteConfirmDelete starts confirm_delete's task, which asks for one
// confirmation.
func (s *server) suiteConfirmDelete(args map[string]json.RawMessage) map[string]any {
	file := argString(args, "filename")
	ask := map[string]any{"confirm": elicit("Delete "+file+"?", "confirm", "boolean")}
	return s.startSuiteTask(ask, func(ctx context.Context, st *suiteTask) (map[string]any, *jsonrpc.Error) {
		answers, ok := s.awaitInput(ctx, st)
		if !ok {
			return nil, nil
		}
		var a struct {
			Action  string `json:"action"`
			Content struct {
				Confirm bool `json:"confirm"`
			} `json:"content"`
		}
		_ = json.Unmarshal(answers["confirm"], &a)
		if a.Action == "accept" && a.Content.Confirm {
			return suiteText("deleted " + file), nil
		}
		return suiteText("kept " + file), nil
	})
}

// suiteMultiInput starts multi_input's task, which asks two questions at
// once.
func (s *server) suiteMultiInput() map[string]any {
	ask := map[string]any{
		"first":  elicit("First name?", "name", "string"),
		"second": elicit("Second name?", "name", "string"),
	}
	return s.startSuiteTask(ask, func(ctx context.Context, st *suiteTask) (map[string]any, *jsonrpc.Error) {
		answers, ok := s.awaitInput(ctx, st)
		if !ok {
			return nil, nil
		}
		keys := make([]string, 0, len(answers))
		for k := range answers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return suiteText(fmt.Sprintf("answered %v", keys)), nil
	})
}

// suiteToolWithTask runs test_tool_with_task: an input-required result
// asking the user's name, then, with the answer, a task greeting them.
func (s *server) suiteToolWithTask(r *req) map[string]any {
	var responses map[string]json.RawMessage
	_ = json.Unmarshal(r.params["inputResponses"], &responses)
	answer, ok := responses["user_name"]
	if !ok {
		return map[string]any{"resultType": "input_required", "inputRequests": map[string]any{
			"user_name": elicit("What is your name?", "name", "string")}}
	}
	var a struct {
		Content struct {
			Name string `json:"name"`
		} `json:"content"`
	}
	_ = json.Unmarshal(answer, &a)
	return s.startSuiteTask(nil, func(ctx context.Context, _ *suiteTask) (map[string]any, *jsonrpc.Error) {
		if !sleepCtx(ctx, 100*time.Millisecond) {
			return nil, nil
		}
		return suiteText("Hello, " + a.Content.Name + "!"), nil
	})
}

// startSuiteTask creates a task, stored before its CreateTaskResult is
// returned, and runs work for it. With ask the task starts input_required
// with those inputRequests. work's nil result and error mean it was
// cancelled.
func (s *server) startSuiteTask(ask map[string]any, work func(context.Context, *suiteTask) (map[string]any, *jsonrpc.Error)) map[string]any {
	ctx, cancel := context.WithCancel(context.Background())
	now := time.Now()
	s.mu.Lock()
	if s.suiteTasks == nil {
		s.suiteTasks = map[string]*suiteTask{}
	}
	s.suiteSeq++
	server, _ := s.info["name"].(string)
	t := &suiteTask{id: fmt.Sprintf("%s-suite-task-%d", server, s.suiteSeq), status: "working", created: now, updated: now,
		pending: ask, answers: map[string]json.RawMessage{}, cancel: cancel, wake: make(chan struct{}, 1)}
	if len(ask) > 0 {
		t.status = "input_required"
	}
	s.suiteTasks[t.id] = t
	create := t.envelope()
	s.mu.Unlock()
	create["resultType"] = "task"
	go func() {
		defer cancel()
		result, rerr := work(ctx, t)
		s.mu.Lock()
		defer s.mu.Unlock()
		if t.terminal() || (result == nil && rerr == nil) {
			return
		}
		t.updated = time.Now()
		if rerr != nil {
			t.status, t.err = "failed", rerr
			return
		}
		t.status, t.result = "completed", result
	}()
	return create
}

// awaitInput waits until every inputRequest of t is answered, and returns
// the answers; ok is false when the task was cancelled first.
func (s *server) awaitInput(ctx context.Context, t *suiteTask) (map[string]json.RawMessage, bool) {
	for {
		s.mu.Lock()
		if len(t.pending) == 0 {
			answers := maps.Clone(t.answers)
			s.mu.Unlock()
			return answers, true
		}
		s.mu.Unlock()
		select {
		case <-t.wake:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// sleepCtx sleeps d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}
