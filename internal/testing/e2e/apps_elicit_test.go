package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// urlElicitHost is a raw legacy host on `mcpdctl bridge everything`
// declaring caps; answer, when set, accepts the elicitations it is asked.
type urlElicitHost struct {
	h  *rawHost
	id int
}

func newURLElicitHost(t *testing.T, d *daemon, caps string) *urlElicitHost {
	t.Helper()
	return newLegacyBridgeHost(t, d, caps, "everything")
}

// newLegacyBridgeHost is newURLElicitHost on `mcpdctl bridge ARGS...`.
func newLegacyBridgeHost(t *testing.T, d *daemon, caps string, args ...string) *urlElicitHost {
	t.Helper()
	in, out := pipeBridge(t, bridgeCommand(d, args...))
	u := &urlElicitHost{h: &rawHost{in: in, out: bufio.NewReaderSize(out, 1<<20)}, id: 1}
	u.h.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := u.h.reply(t, "1"); m.Error != nil {
		t.Fatalf("initialize: %v", m.Error)
	}
	u.h.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return u
}

// call sends a request and reads until its answer, accepting every
// elicitation/create the bridge sends meanwhile; it returns the answer's
// result or error text and the elicitations' params.
func (u *urlElicitHost) call(t *testing.T, method, params string) (result string, asked []string) {
	t.Helper()
	u.id++
	want := fmt.Sprint(u.id)
	u.h.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, u.id, method, params))
	for {
		m := u.h.next(t)
		switch {
		case m.Method == "elicitation/create" && m.ID != nil:
			asked = append(asked, string(m.Params))
			u.h.send(t, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"action":"accept"}}`)
		case m.Method == "" && string(m.ID) == want:
			if m.Error != nil {
				return "error: " + m.Error.Message, asked
			}
			return string(m.Result), asked
		}
	}
}

// mcpd declares elicitation.url to a legacy server (server-everything),
// which then lists trigger-url-elicitation; a host that declared the url
// mode gets the server's url elicitation and its answer completes the
// call; a host that declared only form is not asked, and the call fails
// naming elicitation.url.
func TestURLElicitationReachesHost(t *testing.T) {
	d := startBridgeDaemon(t, map[string]map[string]any{"everything": everythingServer(t)})
	args := `{"name":"trigger-url-elicitation","arguments":{"url":"https://example.com/authorize","message":"Open it","elicitationId":"el-1"}}`
	t.Run("form only", func(t *testing.T) {
		u := newURLElicitHost(t, d, `{"elicitation":{"form":{}}}`)
		tools, _ := u.call(t, "tools/list", "{}")
		if !strings.Contains(tools, `"trigger-url-elicitation"`) {
			t.Fatalf("tools/list lacks trigger-url-elicitation (mcpd declares elicitation.url): %s", tools)
		}
		res, asked := u.call(t, "tools/call", args)
		if len(asked) != 0 {
			t.Errorf("a host that declared form only was asked %v", asked)
		}
		if !strings.Contains(res, "elicitation.url") {
			t.Errorf("call = %s, want a failure naming elicitation.url", res)
		}
	})
	t.Run("url", func(t *testing.T) {
		u := newURLElicitHost(t, d, `{"elicitation":{"form":{},"url":{}}}`)
		res, asked := u.call(t, "tools/call", args)
		if len(asked) != 1 {
			t.Fatalf("host asked %v, want one url elicitation", asked)
		}
		var p struct{ Mode, URL, ElicitationID string }
		_ = json.Unmarshal([]byte(asked[0]), &p)
		if p.Mode != "url" || p.URL != "https://example.com/authorize" || p.ElicitationID != "el-1" {
			t.Errorf("elicitation params %s", asked[0])
		}
		if !strings.Contains(res, "User completed the URL elicitation flow") {
			t.Errorf("call = %s, want the accepted flow", res)
		}
	})
}

// A modern host over HTTP: server-everything's url elicitation during the
// host's call comes back as an input_required result of that call when
// the call declared elicitation.url, and the host's answer completes it;
// a call that declared only form gets no such request and fails naming
// elicitation.url.
func TestURLElicitationModernHost(t *testing.T) {
	_, base := startHTTPDaemon(t, map[string]map[string]any{"everything": everythingServer(t)})
	url := base + "/servers/everything/mcp"
	const params = `"name":"trigger-url-elicitation","arguments":{"url":"https://example.com/authorize","elicitationId":"el-2"}`
	res := modernPost(t, url, "tools/call", params, "trigger-url-elicitation", `{"elicitation":{"form":{}}}`)
	if strings.Contains(res, "input_required") || !strings.Contains(res, "elicitation.url") {
		t.Errorf("call declaring form only = %s, want a failure naming elicitation.url", res)
	}
	caps := `{"elicitation":{"form":{},"url":{}}}`
	res = modernPost(t, url, "tools/call", params, "trigger-url-elicitation", caps)
	var ir struct {
		ResultType    string `json:"resultType"`
		InputRequests map[string]struct {
			Method string `json:"method"`
			Params struct {
				Mode, URL string
			} `json:"params"`
		} `json:"inputRequests"`
		RequestState json.RawMessage `json:"requestState"`
	}
	if err := json.Unmarshal([]byte(res), &ir); err != nil || ir.ResultType != "input_required" || len(ir.InputRequests) != 1 {
		t.Fatalf("call = %s, want input_required with one input request", res)
	}
	var key string
	for k, in := range ir.InputRequests {
		key = k
		if in.Method != "elicitation/create" || in.Params.Mode != "url" || in.Params.URL != "https://example.com/authorize" {
			t.Errorf("input request %+v", in)
		}
	}
	retry := params + `,"inputResponses":{"` + key + `":{"action":"accept"}}`
	if ir.RequestState != nil {
		retry += `,"requestState":` + string(ir.RequestState)
	}
	res = modernPost(t, url, "tools/call", retry, "trigger-url-elicitation", caps)
	if !strings.Contains(res, "User completed the URL elicitation flow") {
		t.Errorf("retried call = %s, want the accepted flow", res)
	}
}
