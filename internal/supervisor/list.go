package supervisor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
)

// maxListPages bounds one List; a server that keeps returning new cursors
// beyond it is broken.
const maxListPages = 1000

// fetchList fetches every page of a list method (tools/list, prompts/list,
// resources/list, resources/templates/list) from a server and returns the
// merged items as one JSON array; List and ListCached (cache.go) serve it
// through the cache. If h is not nil it collects the pages' caching hints.
// A JSON-RPC error from the child is returned as an error wrapping
// *session.RPCError; a cursor cycle or a runaway page count is an error too.
// Any cursor in base.Params is ignored: a list always starts from the first
// page. Each page is one Call under opts.
func (s *Supervisor) fetchList(ctx context.Context, server, method string, base *session.Request, opts CallOptions, h *listHints) (json.RawMessage, error) {
	if h == nil {
		h = &listHints{}
	}
	if _, err := s.lookup(server); err != nil {
		return nil, err
	}
	key, ok := jsonrpc.ListKeys[method]
	if !ok {
		return nil, fmt.Errorf("list %q: %w: %q is not a list method", server, ErrInvalid, method)
	}
	req, params, err := listRequest(server, method, base)
	if err != nil {
		return nil, err
	}

	var (
		items     []json.RawMessage
		seen      = map[string]bool{}
		cursor    *string
		restarted bool
	)
	for page := 0; ; page++ {
		if page >= maxListPages {
			return nil, fmt.Errorf("list %q %s: more than %d pages", server, method, maxListPages)
		}
		if cursor != nil {
			c, _ := json.Marshal(*cursor)
			params["cursor"] = c
		} else {
			delete(params, "cursor")
		}
		p, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("list %q %s: %w", server, method, err)
		}
		req.Params = p
		resp, err := s.namedCall(ctx, server, &req, opts)
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			// "on an invalid-cursor error drop all pages and restart from
			// the first page (no cursor)" — once.
			if resp.Error.Code == jsonrpc.CodeInvalidParams && cursor != nil && !restarted {
				restarted = true
				*h = listHints{}
				items, cursor = nil, nil
				clear(seen)
				page = -1
				continue
			}
			return nil, fmt.Errorf("list %q %s: %w", server, method, resp.Error)
		}
		h.page(resp.Result)
		var next *string
		if items, next, err = appendPage(items, resp.Result, key); err != nil {
			return nil, fmt.Errorf("list %q %s: %w", server, method, err)
		}
		if next == nil {
			break
		}
		if seen[*next] {
			return nil, fmt.Errorf("list %q %s: %w", server, method, errCursorCycle)
		}
		seen[*next] = true
		cursor = next
	}
	if items == nil {
		return json.RawMessage("[]"), nil
	}
	out, err := json.Marshal(items)
	if err != nil {
		return nil, fmt.Errorf("list %q %s: %w", server, method, err)
	}
	return out, nil
}

// listRequest is the request of a list's pages (base's, with method) and
// its params without a cursor.
func listRequest(server, method string, base *session.Request) (session.Request, map[string]json.RawMessage, error) {
	params := map[string]json.RawMessage{}
	req := session.Request{Method: method}
	if base != nil {
		req = *base
		req.Method = method
		if err := validateRequest(&req); err != nil {
			return req, nil, fmt.Errorf("list %q: %w", server, err)
		}
		if p := bytes.TrimSpace(base.Params); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			if err := json.Unmarshal(p, &params); err != nil {
				return req, nil, fmt.Errorf("list %q: %w: params: %v", server, ErrInvalid, err)
			}
		}
	}
	delete(params, "cursor")
	return req, params, nil
}

// appendPage appends the items of one page's result (under key) to items
// and returns the page's next cursor, nil at the end: "Missing nextCursor
// = end. An empty string is a valid cursor, not "end"."
func appendPage(items []json.RawMessage, result json.RawMessage, key string) ([]json.RawMessage, *string, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(result, &fields); err != nil {
		return items, nil, fmt.Errorf("result: %w", err)
	}
	if raw, ok := fields[key]; ok && !isNull(raw) {
		var pageItems []json.RawMessage
		if err := json.Unmarshal(raw, &pageItems); err != nil {
			return items, nil, fmt.Errorf("%q is not an array: %w", key, err)
		}
		items = append(items, pageItems...)
	}
	raw, ok := fields["nextCursor"]
	if !ok || isNull(raw) {
		return items, nil, nil
	}
	var next string
	if err := json.Unmarshal(raw, &next); err != nil {
		return items, nil, fmt.Errorf("nextCursor: %w", err)
	}
	return items, &next, nil
}

var errCursorCycle = errors.New("cursor cycle: the server returned a cursor it returned before")

func isNull(raw json.RawMessage) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}
