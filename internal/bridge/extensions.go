package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Extensions served by several servers as one: skills (SEP-2640) and tasks
// (the 2025-11-25 core tasks and the io.modelcontextprotocol/tasks
// extension). Served alone, a server gets these requests as they are
// (methods.go).
//
// Skills keep their URIs and their names. A skill entry's frontmatter
// "MUST be identical in content to the frontmatter of the SKILL.md it
// describes" and the final segment of its URI "MUST equal frontmatter.name":
// a prefixed name, or a rewritten URI, fails the host's verification of
// the very SKILL.md it reads. So skill URIs are routed as resource URIs
// are: to the server that listed them first; a later server listing the
// same skill URI is left out, with a warning.
//
// Task ids stay as the servers issued them (a host persists them and puts
// them in Mcp-Name); the bridge remembers which server returned each, and
// asks the servers with tasks/get for an id it does not know (one a host
// kept from before the bridge started).

// Extension identifiers.
const (
	extSkills = "io.modelcontextprotocol/skills"
	extTasks  = "io.modelcontextprotocol/tasks"
)

// maxExtPages bounds the pages of one server's listing.
const maxExtPages = 1000

// serverCaps is one served server's capabilities, decoded one level; nil
// when it is not described (yet).
func (b *bridge) serverCapsLocked(server string) map[string]json.RawMessage {
	s := b.info[server]
	if s == nil {
		return nil
	}
	var c map[string]json.RawMessage
	if json.Unmarshal(s.Capabilities, &c) != nil || c == nil {
		return nil
	}
	return c
}

// extensionOf is the settings object server declares for extension id,
// and whether it declares it.
func extensionOf(caps map[string]json.RawMessage, id string) (map[string]json.RawMessage, bool) {
	var exts map[string]json.RawMessage
	if json.Unmarshal(caps["extensions"], &exts) != nil {
		return nil, false
	}
	raw, ok := exts[id]
	if !ok || string(raw) == "null" {
		return nil, false
	}
	var settings map[string]json.RawMessage
	_ = json.Unmarshal(raw, &settings)
	return settings, true
}

// serversWith are the served servers whose capabilities satisfy has, in
// order, plus those not described yet (which may have it: a request to
// one that has not is answered -32601 and passed over).
func (b *bridge) serversWith(ctx context.Context, has func(map[string]json.RawMessage) bool) []string {
	b.refreshInfo(ctx)
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, n := range b.serverNames() {
		if caps := b.serverCapsLocked(n); caps == nil || has(caps) {
			out = append(out, n)
		}
	}
	return out
}

func hasSkills(caps map[string]json.RawMessage) bool {
	_, ok := extensionOf(caps, extSkills)
	return ok
}

func hasDirectoryRead(caps map[string]json.RawMessage) bool {
	settings, ok := extensionOf(caps, extSkills)
	return ok && string(settings["directoryRead"]) == "true"
}

// hasTasks: the legacy tasks capability or the tasks extension.
func hasTasks(caps map[string]json.RawMessage) bool {
	if raw, ok := caps["tasks"]; ok && string(raw) != "null" {
		return true
	}
	_, ok := extensionOf(caps, extTasks)
	return ok
}

// hasTaskList: the legacy tasks capability with list.
func hasTaskList(caps map[string]json.RawMessage) bool {
	var t map[string]json.RawMessage
	if json.Unmarshal(caps["tasks"], &t) != nil {
		return false
	}
	raw, ok := t["list"]
	return ok && string(raw) != "null"
}

// extension serves a request of the skills or tasks extensions, serving
// several servers. handled is false for any other method.
func (b *bridge) extension(ctx context.Context, r *hostReq) (res json.RawMessage, err *jsonrpc.Error, handled bool) {
	switch {
	case r.method == "skills/list":
		res, err = b.skillsList(ctx, r)
	case r.method == "skills/get":
		res, err = b.skillsGet(ctx, r)
	case r.method == "resources/directory/read":
		res, err = b.directoryRead(ctx, r)
	case r.method == "tasks/list":
		res, err = b.tasksList(ctx, r)
	case strings.HasPrefix(r.method, "tasks/"):
		res, err = b.taskRequest(ctx, r)
	default:
		return nil, nil, false
	}
	return res, err, true
}

// extCacheHints adds the caching hints a legacy child's skills/list or
// skills/get result lacks for a modern host: both "extend
// CacheableResult, so ttlMs and cacheScope are REQUIRED" (withCacheHints).
func extCacheHints(r *hostReq, res json.RawMessage) json.RawMessage {
	if !r.modern || res == nil || r.method != "skills/list" && r.method != "skills/get" {
		return res
	}
	return withCacheHints(res)
}

// ---- one server's whole listing ----

// pages sends method to server page by page, following nextCursor, and
// returns the elements of every page's key array.
func (b *bridge) pages(ctx context.Context, r *hostReq, server, method, key string) ([]json.RawMessage, *jsonrpc.Error) {
	var items []json.RawMessage
	seen := map[string]bool{}
	cursor := ""
	for page := 0; page < maxExtPages; page++ {
		req := *r
		req.params = cloneParams(r.params)
		req.members = nil
		delete(req.params, "cursor")
		if cursor != "" {
			req.params["cursor"], _ = json.Marshal(cursor)
		}
		p, perr := req.forwardParams()
		if perr != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "encode params: %v", perr)
		}
		res, err := b.send(ctx, &req, server, method, p)
		if err != nil {
			return nil, err
		}
		var body struct {
			NextCursor *string `json:"nextCursor"`
		}
		top := map[string]json.RawMessage{}
		if json.Unmarshal(res, &top) != nil {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q: bad %s result", server, method)
		}
		_ = json.Unmarshal(res, &body)
		if elems, ok := arrayElements(top[key]); ok {
			items = append(items, elems...)
		} else if raw := top[key]; len(raw) > 0 && string(raw) != "null" {
			return nil, jsonrpc.Errorf(jsonrpc.CodeInternalError, "server %q: %s result's %s is not an array", server, method, key)
		}
		if body.NextCursor == nil || *body.NextCursor == "" {
			return items, nil
		}
		if seen[*body.NextCursor] {
			return items, nil // a cursor cycle: what it gave so far
		}
		seen[*body.NextCursor] = true
		cursor = *body.NextCursor
	}
	return items, nil
}

// merged lists method on each of servers, whole, as one array of items;
// note is called with each item and its server, and says whether it goes
// into the result. A server that fails is left out (with a warning, but
// not for -32601: it has no such method); when every one fails, the
// result is the last error.
func (b *bridge) merged(ctx context.Context, r *hostReq, servers []string, method, key string, note func(server string, item json.RawMessage) bool) ([]json.RawMessage, *jsonrpc.Error) {
	items := []json.RawMessage{}
	var last *jsonrpc.Error
	ok := false
	for _, n := range servers {
		got, err := b.pages(ctx, r, n, method, key)
		if err != nil {
			if ctx.Err() != nil {
				return nil, err
			}
			last = err
			if err.Code != jsonrpc.CodeMethodNotFound {
				b.warnOnce(fmt.Sprintf("server %q is left out of %s: %s", n, method, err.Message))
			}
			continue
		}
		ok = true
		for _, it := range got {
			if note(n, it) {
				items = append(items, it)
			}
		}
	}
	if !ok && last != nil && last.Code != jsonrpc.CodeMethodNotFound {
		return nil, last
	}
	return items, nil
}

// ---- skills ----

// noteSkill records that server serves the skill entry it: its SKILL.md
// URI, its root, and each file it lists; it reports whether the entry
// goes into the listing (false: another server listed that URI first).
// b.mu must not be held.
func (b *bridge) noteSkill(server string, it json.RawMessage) bool {
	var e struct {
		URI       string          `json:"uri"`
		Resources json.RawMessage `json:"resources"`
	}
	if json.Unmarshal(it, &e) != nil || e.URI == "" {
		return true // not an entry the bridge can route: passed on as it is
	}
	b.mu.Lock()
	if first, ok := b.skillURIs[e.URI]; ok && first != server {
		b.mu.Unlock()
		b.warnOnce(fmt.Sprintf("skill %q of server %q is left out: server %q lists it too, and requests for it go there", e.URI, server, first))
		return false
	}
	b.skillURIs[e.URI] = server
	if root, ok := strings.CutSuffix(e.URI, "/SKILL.md"); ok {
		if _, taken := b.skillURIs[root]; !taken {
			b.skillURIs[root] = server
		}
	}
	var files []struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(e.Resources, &files) == nil {
		for _, f := range files {
			if _, taken := b.skillURIs[f.URI]; f.URI != "" && !taken {
				b.skillURIs[f.URI] = server
			}
		}
	}
	b.mu.Unlock()
	return true
}

// skillOwner is the server that listed uri as a skill, a skill's file or
// root, or a directory within a skill: uri itself, else its nearest
// parent that is known.
func (b *bridge) skillOwner(uri string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	scheme, rest, ok := strings.Cut(uri, "://")
	for u := uri; ; {
		if s, found := b.skillURIs[u]; found {
			return s, true
		}
		i := strings.LastIndexByte(rest, '/')
		if !ok || i <= 0 {
			return "", false
		}
		rest = rest[:i]
		u = scheme + "://" + rest
	}
}

// skillsList merges the skills of every server that declares the
// extension, in one page.
func (b *bridge) skillsList(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	if err := checkCursor(r); err != nil {
		return nil, err
	}
	servers := b.serversWith(ctx, hasSkills)
	if len(servers) == 0 {
		return nil, noExtension(r.method, extSkills)
	}
	b.forgetSkills()
	items, err := b.merged(ctx, r, servers, "skills/list", "skills", b.noteSkill)
	if err != nil {
		return nil, err
	}
	return itemsResult(r, "skills", items, nil)
}

// forgetSkills drops the skill routes learnt from earlier listings: a new
// listing says afresh who has what.
func (b *bridge) forgetSkills() {
	b.mu.Lock()
	clear(b.skillURIs)
	b.mu.Unlock()
}

// learnSkills lists the skills, for the routes, when uri is not known yet.
func (b *bridge) learnSkills(ctx context.Context, r *hostReq, uri string) (string, bool) {
	if s, ok := b.skillOwner(uri); ok {
		return s, true
	}
	servers := b.serversWith(ctx, hasSkills)
	if len(servers) == 0 {
		return "", false
	}
	req := *r
	req.params = map[string]json.RawMessage{}
	if m, ok := r.params["_meta"]; ok {
		req.params["_meta"] = m
	}
	req.members = nil
	_, _ = b.merged(ctx, &req, servers, "skills/list", "skills", b.noteSkill)
	return b.skillOwner(uri)
}

// skillsGet routes skills/get by its URI to the server that listed the
// skill; a skill no listing has (a server's listing may be partial) is
// asked of each server with the extension, and the first that serves it
// answers.
func (b *bridge) skillsGet(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	uri, err := uriParam(r)
	if err != nil {
		return nil, err
	}
	if s, ok := b.learnSkills(ctx, r, uri); ok {
		return b.forward(ctx, r, s, r.method, r.params)
	}
	servers := b.serversWith(ctx, hasSkills)
	if len(servers) == 0 {
		return nil, noExtension(r.method, extSkills)
	}
	res, s, err := b.firstServing(ctx, r, servers, r.method, r.params)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.skillURIs[uri] = s
	b.mu.Unlock()
	return res, nil
}

// directoryRead routes resources/directory/read by its URI: to the server
// whose skill (or listed resource) holds the directory, else to the first
// server declaring directoryRead that serves it. A cursor is the server's
// own, and passes through with the URI that routes it.
func (b *bridge) directoryRead(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	uri, err := uriParam(r)
	if err != nil {
		return nil, err
	}
	servers := b.serversWith(ctx, hasDirectoryRead)
	if len(servers) == 0 {
		return nil, noExtension(r.method, extSkills+` with "directoryRead": true`)
	}
	s, ok := b.learnSkills(ctx, r, uri)
	if !ok {
		s, ok = b.resourceUnder(uri)
	}
	if ok && slices.Contains(servers, s) {
		return b.forward(ctx, r, s, r.method, r.params)
	}
	if ok {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "%q is served by server %q, which does not implement resources/directory/read", uri, s)
	}
	res, _, err := b.firstServing(ctx, r, servers, r.method, r.params)
	return res, err
}

// resourceUnder is the server that listed a resource within directory
// uri, if any did.
func (b *bridge) resourceUnder(uri string) (string, bool) {
	prefix := strings.TrimSuffix(uri, "/") + "/"
	b.mu.Lock()
	defer b.mu.Unlock()
	for u, s := range b.uris {
		if strings.HasPrefix(u, prefix) {
			return s, true
		}
	}
	return "", false
}

// firstServing sends method to each of servers in turn until one
// answers; it returns that answer and server. -32602 and -32601 mean
// "not mine"; any other error is the answer. When no server serves it,
// the error is -32602.
func (b *bridge) firstServing(ctx context.Context, r *hostReq, servers []string, method string, params map[string]json.RawMessage) (json.RawMessage, string, *jsonrpc.Error) {
	var last *jsonrpc.Error
	for _, n := range servers {
		res, err := b.forward(ctx, r, n, method, params)
		if err == nil {
			return res, n, nil
		}
		if ctx.Err() != nil {
			return nil, "", err
		}
		switch err.Code {
		case jsonrpc.CodeInvalidParams, jsonrpc.CodeMethodNotFound:
			if last == nil || last.Code == jsonrpc.CodeMethodNotFound {
				last = err
			}
		default:
			return nil, "", err
		}
	}
	if last == nil || last.Code == jsonrpc.CodeMethodNotFound {
		return nil, "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "no server serves %s for these params", method)
	}
	return nil, "", last
}

// uriParam is the request's params.uri, required.
func uriParam(r *hostReq) (string, *jsonrpc.Error) {
	var uri string
	if err := json.Unmarshal(r.params["uri"], &uri); err != nil || uri == "" {
		return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.uri required")
	}
	return uri, nil
}

// noExtension is the error for a method of an extension no served server
// declares: as a server without it answers.
func noExtension(method, ext string) *jsonrpc.Error {
	return jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q not found: no server here declares %s", method, ext)
}

// ---- tasks ----

// noteTask records the task a result of server carries: a legacy
// CreateTaskResult ({"task": {"taskId": …}}) or the extension's
// ({"resultType": "task", "taskId": …}); for routing in the aggregate,
// and for the task's status notifications (taskstatus.go).
func (b *bridge) noteTask(server string, res json.RawMessage) {
	if len(res) == 0 || !bytes.Contains(res, []byte(`"taskId"`)) {
		return
	}
	var v struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Task       *struct {
			TaskID string `json:"taskId"`
		} `json:"task"`
	}
	if json.Unmarshal(res, &v) != nil {
		return
	}
	id := ""
	switch {
	case v.ResultType == "task":
		id = v.TaskID
	case v.Task != nil:
		id = v.Task.TaskID
	}
	if id != "" {
		b.newTask(server, id) // taskstatus.go
	}
}

// rememberTask records that task id is server's.
func (b *bridge) rememberTask(id, server string) {
	b.mu.Lock()
	first, known := b.taskIDs[id]
	b.taskIDs[id] = server
	b.mu.Unlock()
	if known && first != server && b.aggr {
		b.warnOnce(fmt.Sprintf("task id %q of server %q is one server %q issued too; requests for it now go to %q", id, server, first, server))
	}
}

// taskMethods are the requests about one task: 2025-11-25's tasks/get,
// tasks/result and tasks/cancel, and the extension's tasks/get,
// tasks/update and tasks/cancel.
var taskMethods = []string{"tasks/get", "tasks/result", "tasks/cancel", "tasks/update"}

// taskRequest routes tasks/get, tasks/result, tasks/cancel, tasks/update
// by params.taskId to the server that returned the task.
func (b *bridge) taskRequest(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	if !slices.Contains(taskMethods, r.method) {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q not found", r.method)
	}
	var id string
	if err := json.Unmarshal(r.params["taskId"], &id); err != nil || id == "" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "params.taskId required")
	}
	servers := b.serversWith(ctx, hasTasks)
	if len(servers) == 0 {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q not found: no server here declares tasks", r.method)
	}
	b.mu.Lock()
	s, known := b.taskIDs[id]
	b.mu.Unlock()
	if !known {
		// A task of an earlier bridge: tasks/get changes nothing, so the
		// servers are asked with it which one has the task.
		probe := map[string]json.RawMessage{"taskId": r.params["taskId"]}
		if m, ok := r.params["_meta"]; ok {
			probe["_meta"] = m
		}
		res, owner, err := b.firstServing(ctx, r, servers, "tasks/get", probe)
		if err != nil {
			if err.Code == jsonrpc.CodeInvalidParams {
				err = jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown task %q: no server here has it", id)
			}
			return nil, err
		}
		b.rememberTask(id, owner)
		if r.method == "tasks/get" {
			return res, nil
		}
		s = owner
	}
	return b.forward(ctx, r, s, r.method, r.params)
}

// tasksList merges the tasks of every server whose tasks capability has
// list (2025-11-25; the extension has no tasks/list), in one page.
func (b *bridge) tasksList(ctx context.Context, r *hostReq) (json.RawMessage, *jsonrpc.Error) {
	if err := checkCursor(r); err != nil {
		return nil, err
	}
	servers := b.serversWith(ctx, hasTaskList)
	if len(servers) == 0 {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method %q not found: no server here lists tasks", r.method)
	}
	items, err := b.merged(ctx, r, servers, "tasks/list", "tasks", func(server string, it json.RawMessage) bool {
		var t struct {
			TaskID string `json:"taskId"`
		}
		if json.Unmarshal(it, &t) == nil && t.TaskID != "" {
			b.rememberTask(t.TaskID, server)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	return itemsResult(r, "tasks", items, nil)
}
