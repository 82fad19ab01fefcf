package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

// extServers are two fakes serving skills and tasks, one of each era, so
// that an aggregate routes to a modern and a legacy child alike.
func extServers() map[string]map[string]any {
	bin, args := fakemcp.Command()
	server := func(name, mode string) map[string]any {
		return map[string]any{"command": bin, "args": args,
			"env": map[string]string{fakemcp.EnvMode: mode, fakemcp.EnvName: name}}
	}
	return map[string]map[string]any{
		"alpha": server("alpha", "modern,skills,tasks"),
		"beta":  server("beta", "legacy,skills,tasks"),
	}
}

// rpc sends one request to an aggregate door and returns its result or
// error.
type rpc func(t *testing.T, method, params string) (json.RawMessage, *jsonrpc.Error)

// modernHTTP is rpc over /mcp as a 2026-07-28 host that declares the
// tasks extension, with the standard headers.
func modernHTTP(url string) rpc {
	id := 0
	return func(t *testing.T, method, params string) (json.RawMessage, *jsonrpc.Error) {
		t.Helper()
		id++
		var p map[string]json.RawMessage
		if err := json.Unmarshal([]byte(params), &p); err != nil {
			t.Fatalf("params %s: %v", params, err)
		}
		p["_meta"] = json.RawMessage(`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"}}`)
		body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
		name := ""
		for _, k := range []string{"name", "uri", "taskId"} {
			if v, ok := p[k]; ok && method != "skills/get" && method != "resources/directory/read" {
				_ = json.Unmarshal(v, &name)
				break
			}
		}
		status, _, out := rawPost(t, url, string(body), modernHeaders(method, name)...)
		if msgs := sseMessages(out); len(msgs) > 0 {
			out = msgs[len(msgs)-1]
		}
		res, rerr := decodeReply(t, method, out)
		if status != http.StatusOK && rerr == nil {
			t.Fatalf("%s: HTTP %d %s", method, status, out)
		}
		return res, rerr
	}
}

// legacyStdio is rpc over `mcpdctl bridge --all` as a 2025-11-25 host.
func legacyStdio(t *testing.T, d *daemon) (rpc, json.RawMessage) {
	in, out := pipeBridge(t, bridgeCommand(d, "--all"))
	h := &rawHost{in: in, out: bufio.NewReaderSize(out, 1<<20)}
	h.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	m := h.reply(t, "0")
	if m.Error != nil {
		t.Fatalf("initialize: %v", m.Error)
	}
	var init struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(m.Result, &init)
	h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 0
	return func(t *testing.T, method, params string) (json.RawMessage, *jsonrpc.Error) {
		t.Helper()
		id++
		h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params))
		m := h.reply(t, fmt.Sprint(id))
		return m.Result, m.Error
	}, init.Capabilities
}

func decodeReply(t *testing.T, method, body string) (json.RawMessage, *jsonrpc.Error) {
	t.Helper()
	var m jsonrpc.Message
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("%s: answer %q: %v", method, body, err)
	}
	return m.Result, m.Error
}

// must is the result of method, failing the test on an error.
func must(t *testing.T, call rpc, method, params string) json.RawMessage {
	t.Helper()
	res, err := call(t, method, params)
	if err != nil {
		t.Fatalf("%s %s: %d %s", method, params, err.Code, err.Message)
	}
	return res
}

// exerciseSkills checks skills through an aggregate of extServers.
func exerciseSkills(t *testing.T, call rpc, modern bool) {
	// A skill's file is read from the server that serves it before any
	// listing: the bridge learns where it is from the skills lists.
	res := must(t, call, "resources/read", `{"uri":"skill://beta-guide/references/NOTES.md"}`)
	if !strings.Contains(string(res), "notes of beta") {
		t.Errorf("read of beta's NOTES.md = %s", res)
	}

	var list struct {
		Skills []struct {
			URI         string `json:"uri"`
			Frontmatter struct {
				Name string `json:"name"`
			} `json:"frontmatter"`
			Resources []struct {
				URI string `json:"uri"`
			} `json:"resources"`
		} `json:"skills"`
		NextCursor *string `json:"nextCursor"`
		ResultType string  `json:"resultType"`
		TTL        *int64  `json:"ttlMs"`
		CacheScope string  `json:"cacheScope"`
	}
	raw := must(t, call, "skills/list", `{}`)
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, s := range list.Skills {
		uris = append(uris, s.URI)
		// Names and URIs as the server has them: the host verifies the
		// SKILL.md against them.
		if want := "skill://" + s.Frontmatter.Name + "/SKILL.md"; s.URI != want {
			t.Errorf("skill %s named %q", s.URI, s.Frontmatter.Name)
		}
	}
	want := []string{"skill://alpha-guide/SKILL.md", "skill://alpha-extra/SKILL.md", fakemcp.SharedSkill, "skill://beta-guide/SKILL.md", "skill://beta-extra/SKILL.md"}
	if !slices.Equal(uris, want) {
		t.Errorf("skills/list = %v, want every page of both servers, the shared skill once: %v", uris, want)
	}
	if list.NextCursor != nil {
		t.Errorf("skills/list has nextCursor %q: the aggregate answers in one page", *list.NextCursor)
	}
	if modern && (list.ResultType != "complete" || list.TTL == nil || list.CacheScope == "") {
		t.Errorf("modern skills/list lacks resultType, ttlMs or cacheScope: %s", raw)
	}
	if !modern && strings.Contains(string(raw), `"resultType"`) {
		t.Errorf("legacy skills/list carries resultType: %s", raw)
	}
	if _, err := call(t, "skills/list", `{"cursor":"page-2"}`); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("skills/list with a cursor the aggregate did not issue = %v, want -32602", err)
	}

	for _, s := range []string{"alpha", "beta"} {
		uri := "skill://" + s + "-guide/SKILL.md"
		var got struct {
			Skill struct {
				URI         string `json:"uri"`
				Frontmatter struct {
					Description string `json:"description"`
				} `json:"frontmatter"`
			} `json:"skill"`
		}
		if err := json.Unmarshal(must(t, call, "skills/get", `{"uri":"`+uri+`"}`), &got); err != nil {
			t.Fatal(err)
		}
		if got.Skill.URI != uri || !strings.Contains(got.Skill.Frontmatter.Description, "of server "+s) {
			t.Errorf("skills/get %s = %+v", uri, got.Skill)
		}
		if res := must(t, call, "resources/read", `{"uri":"`+uri+`"}`); !strings.Contains(string(res), "Served by "+s) {
			t.Errorf("read %s = %s", uri, res)
		}
		// The directory reads of a skill go to its server.
		dir := must(t, call, "resources/directory/read", `{"uri":"skill://`+s+`-guide"}`)
		for _, child := range []string{`"skill://` + s + `-guide/SKILL.md"`, `"skill://` + s + `-guide/references"`, `"inode/directory"`} {
			if !strings.Contains(string(dir), child) {
				t.Errorf("directory read of %s-guide = %s, lacks %s", s, dir, child)
			}
		}
		sub := must(t, call, "resources/directory/read", `{"uri":"skill://`+s+`-guide/templates"}`)
		if !strings.Contains(string(sub), `"skill://`+s+`-guide/templates/a.md"`) {
			t.Errorf("directory read of %s-guide/templates = %s", s, sub)
		}
	}
	if _, err := call(t, "skills/get", `{"uri":"skill://nobody/SKILL.md"}`); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("skills/get of a skill no server serves = %v, want -32602", err)
	}
	if _, err := call(t, "resources/directory/read", `{"uri":"skill://alpha-guide/SKILL.md"}`); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("directory read of a file = %v, want -32602", err)
	}
}

// exerciseTasks starts a task on each server of extServers and reaches
// each by its id alone.
func exerciseTasks(t *testing.T, call rpc, modern bool) {
	params := `{"name":"%s__start_task","arguments":{},"task":{"ttl":60000}}`
	if modern {
		params = `{"name":"%s__start_task","arguments":{}}`
	}
	ids := map[string]string{}
	for _, s := range []string{"alpha", "beta"} {
		res := must(t, call, "tools/call", fmt.Sprintf(params, s))
		var v struct {
			TaskID string `json:"taskId"`
			Task   struct {
				TaskID string `json:"taskId"`
			} `json:"task"`
		}
		_ = json.Unmarshal(res, &v)
		id := v.TaskID + v.Task.TaskID
		if id == "" {
			t.Fatalf("%s__start_task = %s: no task", s, res)
		}
		ids[s] = id
	}
	for s, id := range ids {
		res := must(t, call, "tasks/get", `{"taskId":"`+id+`"}`)
		if !strings.Contains(string(res), `"taskId":"`+id+`"`) {
			t.Errorf("tasks/get %s = %s", id, res)
		}
		if modern && s == "alpha" && !strings.Contains(string(res), "of "+s) {
			// The modern child inlines the result (the legacy one has
			// tasks/result for it).
			t.Errorf("tasks/get %s = %s, want the result of %s's task", id, res, s)
		}
		if !modern {
			if res := must(t, call, "tasks/result", `{"taskId":"`+id+`"}`); !strings.Contains(string(res), "of "+s) {
				t.Errorf("tasks/result %s = %s, want %s's", id, res, s)
			}
		}
		must(t, call, "tasks/cancel", `{"taskId":"`+id+`"}`)
	}
	if _, err := call(t, "tasks/get", `{"taskId":"no-such-task"}`); err == nil || err.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("tasks/get of an unknown id = %v, want -32602", err)
	}
	if modern {
		if _, err := call(t, "tasks/list", `{}`); err == nil || err.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("modern tasks/list = %v, want -32601 (removed)", err)
		}
		return
	}
	// tasks/list is 2025-11-25's: the legacy child lists its tasks, the
	// modern one has no such method and is left out.
	if res := must(t, call, "tasks/list", `{}`); !strings.Contains(string(res), `"`+ids["beta"]+`"`) {
		t.Errorf("tasks/list = %s, lacks %s", res, ids["beta"])
	}
}

// capsDeclareExtensions checks the aggregate's capabilities: the union.
func capsDeclareExtensions(t *testing.T, caps json.RawMessage) {
	t.Helper()
	var c struct {
		Tasks      json.RawMessage `json:"tasks"`
		Extensions map[string]struct {
			DirectoryRead bool `json:"directoryRead"`
		} `json:"extensions"`
	}
	if err := json.Unmarshal(caps, &c); err != nil {
		t.Fatal(err)
	}
	if !c.Extensions["io.modelcontextprotocol/skills"].DirectoryRead {
		t.Errorf("capabilities %s: no skills extension with directoryRead", caps)
	}
	if _, ok := c.Extensions["io.modelcontextprotocol/tasks"]; !ok || len(c.Tasks) == 0 {
		t.Errorf("capabilities %s: tasks not declared in both eras", caps)
	}
}

// Skills and tasks of two servers through /mcp, as a modern host.
func TestAggregateExtensionsHTTP(t *testing.T) {
	_, base := startHTTPDaemon(t, extServers())
	call := modernHTTP(base + "/mcp")
	var disc struct {
		Capabilities json.RawMessage `json:"capabilities"`
	}
	_ = json.Unmarshal(must(t, call, "server/discover", `{}`), &disc)
	capsDeclareExtensions(t, disc.Capabilities)
	t.Run("skills", func(t *testing.T) { exerciseSkills(t, call, true) })
	t.Run("tasks", func(t *testing.T) { exerciseTasks(t, call, true) })
	// A second door, a legacy session on /mcp, finds the tasks the first
	// started by asking the servers.
	t.Run("legacy-session", func(t *testing.T) {
		url := base + "/mcp"
		sid := legacySession(t, url)
		status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"beta-task-1"}}`, "Mcp-Session-Id", sid)
		if msgs := sseMessages(body); len(msgs) > 0 {
			body = msgs[len(msgs)-1]
		}
		if status != http.StatusOK || !strings.Contains(body, `"taskId":"beta-task-1"`) {
			t.Errorf("tasks/get of a task another door started = %d %s", status, body)
		}
	})
}

// Skills and tasks of two servers through `mcpdctl bridge --all`, as a
// legacy host.
func TestAggregateExtensionsBridgeAll(t *testing.T) {
	d := startBridgeDaemon(t, extServers())
	call, caps := legacyStdio(t, d)
	capsDeclareExtensions(t, caps)
	t.Run("skills", func(t *testing.T) { exerciseSkills(t, call, false) })
	t.Run("tasks", func(t *testing.T) { exerciseTasks(t, call, false) })
}
