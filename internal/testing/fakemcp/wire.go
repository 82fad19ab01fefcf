package fakemcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
)

// reply writes the response to r. Modern results get resultType and the
// serverInfo _meta key.
func (s *server) reply(r *req, result map[string]any, rerr *jsonrpc.Error) {
	resp := map[string]any{"jsonrpc": jsonrpc.Version, "id": r.id}
	if rerr != nil {
		resp["error"] = rerr
	} else {
		if r.modern {
			if _, ok := result["resultType"]; !ok {
				result["resultType"] = "complete"
			}
			meta, _ := result["_meta"].(map[string]any)
			if meta == nil {
				meta = map[string]any{}
			}
			meta[jsonrpc.MetaServerInfo] = s.info
			result["_meta"] = meta
		}
		resp["result"] = result
	}
	s.write(resp)
}

func (s *server) notify(method string, params any) {
	s.write(map[string]any{"jsonrpc": jsonrpc.Version, "method": method, "params": params})
}

// request sends a server→client request and waits for the answer or ctx.
// afterWrite, if not nil, runs with the request's id once it was written.
func (s *server) request(ctx context.Context, method string, params any, afterWrite func(id int64)) (*jsonrpc.Message, error) {
	s.mu.Lock()
	id := s.nextID
	s.nextID++
	key := strconv.FormatInt(id, 10)
	ch := make(chan *jsonrpc.Message, 1)
	s.waiting[key] = ch
	s.mu.Unlock()
	msg := map[string]any{"jsonrpc": jsonrpc.Version, "id": id, "method": method}
	if params != nil {
		msg["params"] = params
	}
	s.write(msg)
	if afterWrite != nil {
		afterWrite(id)
	}
	select {
	case m := <-ch:
		return m, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.waiting, key)
		s.mu.Unlock()
		return nil, ctx.Err()
	}
}

func (s *server) write(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	b = append(b, '\n')
	if s.flags["garbage"] {
		b = slices.Concat([]byte("garbage: not json\n[\"array\"]\n"), b[:len(b)-1], []byte("\r\n"))
	}
	s.writeRaw(b)
}

func (s *server) writeRaw(b []byte) {
	s.outMu.Lock()
	defer s.outMu.Unlock()
	_, _ = s.out.Write(b)
}

func (s *server) logf(format string, args ...any) {
	if s.flags["quiet"] && strings.HasPrefix(format, "recv") {
		return
	}
	s.errLine(fmt.Sprintf(format, args...))
}

func (s *server) errLine(line string) {
	s.errMu.Lock()
	defer s.errMu.Unlock()
	_, _ = io.WriteString(s.errw, line+"\n")
}

// fileExists reports whether path names an existing file ("" never does).
func fileExists(path string) bool {
	if path == "" {
		return false
	}
	_, err := os.Stat(path)
	return err == nil
}
