package fakemcp

import (
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

func init() {
	tools = append(tools, tool{"addtool",
		`adds a tool named "name" to tools/list (listed only, not callable), then emits notifications/tools/list_changed as "changed" does, before its own answer`,
		toolAddTool})
}

// toolAddTool changes the tool list for real and announces it.
func toolAddTool(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	name := argString(args, "name")
	if name == "" {
		return "", jsonrpc.Errorf(jsonrpc.CodeInvalidParams, `"name" is required`)
	}
	s.mu.Lock()
	s.added = append(s.added, name)
	s.mu.Unlock()
	return toolChanged(s, r, map[string]json.RawMessage{"kind": json.RawMessage(`"tools"`)})
}

// addedTools is the list entries of the tools addtool added, in order.
func (s *server) addedTools() []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]map[string]any, 0, len(s.added))
	for _, name := range s.added {
		out = append(out, map[string]any{
			"name": name, "description": "added by addtool",
			"inputSchema": map[string]any{"type": "object"},
		})
	}
	return out
}
