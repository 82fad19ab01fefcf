package fakemcp

import (
	"encoding/json"
	"maps"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// GreetingTemplate is the resource template the templates flag lists; its
// resources read as "hello <name>".
const GreetingTemplate = "fake://greeting/{name}"

// greetingPrefix is GreetingTemplate up to its variable.
const greetingPrefix = "fake://greeting/"

// GreetingNames are the completions of the "name" argument of
// GreetingTemplate and of the prompt greet, in this order.
var GreetingNames = []string{"ada", "alan", "grace"}

// caps are the capabilities the fake declares: with the templates flag,
// also completions.
func (s *server) caps() map[string]any {
	if s.flags["toolsonly"] {
		return map[string]any{"tools": capabilities["tools"]}
	}
	out := capabilities
	if s.flags["templates"] {
		out = maps.Clone(capabilities)
		out["completions"] = map[string]any{}
	}
	if s.flags["skills"] {
		out = skillCaps(out)
	}
	if s.flags["tasks"] {
		out = taskCaps(out)
	}
	if s.flags["tasksuite"] {
		out = suiteCaps(out)
	}
	return out
}

// templates serves what the templates flag adds: the listing of
// GreetingTemplate, reads of its resources and completion/complete.
// handled is false for any other request, and without the flag.
func (s *server) templates(r *req, cacheable func(map[string]any) map[string]any) (result map[string]any, rerr *jsonrpc.Error, handled bool) {
	if !s.flags["templates"] {
		return nil, nil, false
	}
	switch r.method {
	case "resources/templates/list":
		return cacheable(map[string]any{"resourceTemplates": []any{
			map[string]any{"uriTemplate": GreetingTemplate, "name": "greeting", "mimeType": "text/plain"},
		}}), nil, true
	case "resources/read":
		var uri string
		_ = json.Unmarshal(r.params["uri"], &uri)
		name, ok := strings.CutPrefix(uri, greetingPrefix)
		if !ok || name == "" {
			return nil, nil, false
		}
		return cacheable(map[string]any{"contents": []any{
			map[string]any{"uri": uri, "mimeType": "text/plain", "text": "hello " + name},
		}}), nil, true
	case "completion/complete":
		result, rerr = complete(r)
		return result, rerr, true
	}
	return nil, nil, false
}

// complete answers completion/complete for the "name" argument of
// GreetingTemplate or of the prompt greet with the GreetingNames that
// start with the argument's value.
func complete(r *req) (map[string]any, *jsonrpc.Error) {
	var ref struct {
		Type string `json:"type"`
		Name string `json:"name"`
		URI  string `json:"uri"`
	}
	var arg struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	}
	if json.Unmarshal(r.params["ref"], &ref) != nil || json.Unmarshal(r.params["argument"], &arg) != nil {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "ref and argument must be objects")
	}
	switch {
	case ref.Type == "ref/resource" && ref.URI == GreetingTemplate:
	case ref.Type == "ref/prompt" && ref.Name == "greet":
	default:
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "nothing to complete for %s %q", ref.Type, ref.URI+ref.Name)
	}
	if arg.Name != "name" {
		return nil, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "unknown argument %q", arg.Name)
	}
	values := []string{}
	for _, n := range GreetingNames {
		if strings.HasPrefix(n, arg.Value) {
			values = append(values, n)
		}
	}
	return map[string]any{"completion": map[string]any{"values": values, "total": len(values), "hasMore": false}}, nil
}
