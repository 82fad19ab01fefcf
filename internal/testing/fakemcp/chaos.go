package fakemcp

import (
	"encoding/json"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// Misbehaviours on demand, for chaos tests: every tool here answers with
// its "message" argument when it answers at all, so that a test can tell
// whose answer it got.
func init() {
	tools = append(tools,
		tool{"truncated", `first writes the start of its answer line, cut off mid-JSON (a truncated line), then answers with "message"`, toolTruncated},
		tool{"twice", `answers with "message", then answers the same id again with "late <message>"`, toolTwice},
		tool{"stderrraw", `writes "kb" (default 1024) KiB to stderr without any newline and answers with "message"`, toolStderrRaw},
	)
}

func toolTruncated(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	line, _ := json.Marshal(map[string]any{"jsonrpc": jsonrpc.Version, "id": r.id,
		"result": map[string]any{"content": []any{textContent(argString(args, "message"))}}})
	s.writeRaw(append(line[:len(line)/2:len(line)/2], '\n'))
	return argString(args, "message"), nil
}

func toolTwice(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	msg := argString(args, "message")
	s.reply(r, map[string]any{"content": []any{textContent(msg)}}, nil)
	s.reply(r, map[string]any{"content": []any{textContent("late " + msg)}}, nil)
	return "", errNoReply
}

func toolStderrRaw(s *server, r *req, args map[string]json.RawMessage) (string, *jsonrpc.Error) {
	chunk := strings.Repeat("r", 1024)
	s.errMu.Lock()
	for range argInt(args, "kb", 1024) {
		_, _ = s.errw.Write([]byte(chunk))
	}
	s.errMu.Unlock()
	return argString(args, "message"), nil
}
