package fakemcp

import (
	"encoding/json"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

func init() {
	tools = append(tools, tool{"elicit_url",
		`sends elicitation/create in url mode (elicitationId "id", default "el-fake"; "url", default https://example.com/flow) and returns the answer as tool sample does; when it is accepted, emits notifications/elicitation/complete for that elicitationId before its own answer`,
		toolElicitURL})
}

// toolElicitURL is a url elicitation and, once accepted, its completion.
func toolElicitURL(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	id := argString(args, "id")
	if id == "" {
		id = "el-fake"
	}
	url := argString(args, "url")
	if url == "" {
		url = "https://example.com/flow"
	}
	m, err := s.request(r.ctx, "elicitation/create", map[string]any{
		"mode": "url", "message": "Open the link", "url": url, "elicitationId": id,
	}, nil)
	if err != nil {
		return "", errNoReply
	}
	var res struct {
		Action string `json:"action"`
	}
	if m.Error == nil && json.Unmarshal(m.Result, &res) == nil && res.Action == "accept" {
		s.notify("notifications/elicitation/complete", map[string]any{"elicitationId": id})
	}
	return answerText(m), nil
}
