package fakemcp

import (
	"encoding/json"
	"os"
	"time"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// The MCP methods the fake serves once a request has passed the era checks.
// The flags' own methods are in templates.go, skills.go, tasks.go and
// tasksuite.go; the tools are in tools.go.

// dispatch serves one request after the era checks.
func (s *server) dispatch(r *req) (map[string]any, *jsonrpc.Error) {
	cacheable := func(m map[string]any) map[string]any { return s.cacheable(r, m) }
	if result, rerr, ok := s.templates(r, cacheable); ok {
		return result, rerr
	}
	if result, rerr, ok := s.skillsRequest(r, cacheable); ok {
		return result, rerr
	}
	if result, rerr, ok := s.taskSuite(r); ok {
		return result, rerr
	}
	if result, rerr, ok := s.tasksRequest(r); ok {
		return result, rerr
	}
	switch r.method {
	case "ping":
		return map[string]any{}, nil
	case "server/discover":
		return cacheable(map[string]any{
			"supportedVersions": s.versions,
			"capabilities":      s.caps(),
			"instructions":      instructions,
		}), nil
	case "tools/list":
		return s.toolsList(r)
	case "tools/call":
		return s.callTool(r)
	case "resources/list":
		if s.flags["readall"] {
			return cacheable(map[string]any{"resources": []any{}}), nil
		}
		return cacheable(map[string]any{"resources": []any{
			map[string]any{"uri": "fake://hello", "name": "hello", "mimeType": "text/plain"},
		}}), nil
	case "resources/templates/list":
		return cacheable(map[string]any{"resourceTemplates": []any{}}), nil
	case "resources/read":
		return s.readResource(r)
	case "resources/subscribe", "resources/unsubscribe":
		return s.resourceSubscription(r)
	case "prompts/list":
		return cacheable(map[string]any{"prompts": []any{
			map[string]any{"name": "greet", "description": "greets someone",
				"arguments": []any{map[string]any{"name": "name", "required": false}}},
		}}), nil
	case "prompts/get":
		return getPrompt(r)
	case "subscriptions/listen":
		if !r.modern {
			return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "Method not found")
		}
		return s.listen(r)
	}
	return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %q", r.method)
}

// cacheable adds the cache hints to a modern request's result m.
func (s *server) cacheable(r *req, m map[string]any) map[string]any {
	if r.modern {
		m["ttlMs"] = s.ttl
		m["cacheScope"] = "public"
	}
	return m
}

// toolsList answers tools/list, after the list delay if one is set and
// its file (if any) exists: the fixed tools, the added ones and the
// flags' own.
func (s *server) toolsList(r *req) (map[string]any, *jsonrpc.Error) {
	if s.listWait > 0 && (os.Getenv(EnvListDelayWhile) == "" || fileExists(os.Getenv(EnvListDelayWhile))) {
		select {
		case <-time.After(s.listWait):
		case <-r.ctx.Done():
			return nil, errNoReply
		}
	}
	list := make([]map[string]any, 0, len(tools))
	for _, t := range tools {
		list = append(list, map[string]any{
			"name": t.name, "description": describe(t.name, t.description), // descfile.go
			"inputSchema": map[string]any{"type": "object"},
		})
	}
	list = append(list, s.addedTools()...)
	if s.flags["tasksuite"] {
		list = append(list, suiteToolList()...)
	}
	if s.flags["tasks"] {
		list = append(list, map[string]any{"name": "start_task", "description": "starts a task (tasks.go)",
			"inputSchema": map[string]any{"type": "object"}, "execution": map[string]any{"taskSupport": "optional"}},
			map[string]any{"name": "task_status", "description": taskStatusDescription, "inputSchema": map[string]any{"type": "object"}})
	}
	return s.cacheable(r, map[string]any{"tools": list}), nil
}

// readResource answers resources/read: fake://hello, or any URI with the
// readall flag.
func (s *server) readResource(r *req) (map[string]any, *jsonrpc.Error) {
	var uri string
	_ = json.Unmarshal(r.params["uri"], &uri)
	if s.flags["readall"] {
		return s.cacheable(r, map[string]any{"contents": []any{
			map[string]any{"uri": uri, "mimeType": "text/plain", "text": "read anything: " + uri},
		}}), nil
	}
	if uri != "fake://hello" {
		return nil, jsonrpc.WithData(jsonrpc.CodeInvalidParams, "Resource not found", map[string]any{"uri": uri})
	}
	return s.cacheable(r, map[string]any{"contents": []any{
		map[string]any{"uri": uri, "mimeType": "text/plain", "text": "hello"},
	}}), nil
}

// resourceSubscription answers resources/subscribe and unsubscribe, which
// the modern era does not have; with the exitonsubscribe flag a subscribe
// exits the process.
func (s *server) resourceSubscription(r *req) (map[string]any, *jsonrpc.Error) {
	if r.modern {
		return nil, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound, "method not found: %q", r.method)
	}
	if r.method == "resources/subscribe" && s.flags["exitonsubscribe"] {
		s.errLine("fakemcp: exit on subscribe")
		os.Exit(exitSubscribe)
	}
	return map[string]any{}, nil
}

// getPrompt answers prompts/get for the one prompt, greet.
func getPrompt(r *req) (map[string]any, *jsonrpc.Error) {
	var name string
	_ = json.Unmarshal(r.params["name"], &name)
	if name != "greet" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown prompt %q", name)
	}
	var args struct {
		Name string `json:"name"`
	}
	_ = json.Unmarshal(r.params["arguments"], &args)
	if args.Name == "" {
		args.Name = "world"
	}
	return map[string]any{"messages": []any{map[string]any{
		"role": "user", "content": textContent("hello " + args.Name),
	}}}, nil
}

// listen acknowledges the filter, then holds the request open until it is
// cancelled and closes it with a tagged success result.
func (s *server) listen(r *req) (map[string]any, *jsonrpc.Error) {
	var filter json.RawMessage = []byte("{}")
	if f := r.params["notifications"]; f != nil {
		filter = f
	}
	s.fanMu.Lock()
	s.mu.Lock()
	s.listens[string(r.id)] = filter
	s.mu.Unlock()
	s.notify("notifications/subscriptions/acknowledged", map[string]any{
		"_meta":         map[string]any{jsonrpc.MetaSubscriptionID: r.id},
		"notifications": filter,
	})
	s.fanMu.Unlock()
	<-r.ctx.Done()
	s.mu.Lock()
	delete(s.listens, string(r.id))
	s.mu.Unlock()
	return map[string]any{"_meta": map[string]any{jsonrpc.MetaSubscriptionID: r.id}}, nil
}
