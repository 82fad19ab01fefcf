package fakemcp

import (
	"encoding/json"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

func init() {
	tools = append(tools, tool{"big",
		`returns a text of "bytes" (default 1 MiB) "x" characters; with "resultfirst": true the response line puts "result" before "id"`,
		toolBig})
}

func toolBig(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	text := strings.Repeat("x", max(argInt(args, "bytes", 1<<20), 0))
	if !strings.Contains(string(args["resultfirst"]), "true") {
		return text, nil
	}
	result := map[string]any{"content": []any{textContent(text)}}
	if r.modern {
		result["resultType"] = "complete"
		result["_meta"] = map[string]any{jsonrpc.MetaServerInfo: s.info}
	}
	// Struct fields are encoded in order, unlike map keys.
	s.write(struct {
		JSONRPC string          `json:"jsonrpc"`
		Result  map[string]any  `json:"result"`
		ID      json.RawMessage `json:"id"`
	}{jsonrpc.Version, result, r.id})
	return "", errNoReply
}
