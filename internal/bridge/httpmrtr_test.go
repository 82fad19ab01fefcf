package bridge

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/service"
)

// askMCPD is fakeMCPD with host registrations and a tool "ask" on alpha
// that works like a legacy child asking its client: it reports progress,
// sends sampling/createMessage to the host through its registration,
// reports progress again once answered, and returns the answer.
type askMCPD struct {
	*fakeMCPD
	hosts chan askHost // each host registration the bridge made
}

// askHost is one host registration: its context and its answerer.
type askHost struct {
	ctx    context.Context
	answer service.HostAnswerer
}

func newAskMCPD() *askMCPD {
	return &askMCPD{fakeMCPD: newFakeMCPD(), hosts: make(chan askHost, 4)}
}

func (f *askMCPD) ServeHost(ctx context.Context, _ service.HostRegistration, registered func(), answer service.HostAnswerer, _ service.HostNotifier) error {
	registered()
	// Like mcpd, route calls to the host only once it is registered.
	select {
	case f.hosts <- askHost{ctx: ctx, answer: answer}:
	case <-ctx.Done():
		return ctx.Err()
	}
	<-ctx.Done()
	return ctx.Err()
}

func (f *askMCPD) Send(ctx context.Context, r service.Request, onEvent func(service.Event)) (*service.Response, error) {
	var p struct {
		Name string `json:"name"`
		Meta struct {
			ProgressToken json.RawMessage `json:"progressToken"`
		} `json:"_meta"`
	}
	_ = json.Unmarshal(r.Params, &p)
	if p.Name != "ask" {
		return f.fakeMCPD.Send(ctx, r, onEvent)
	}
	progress := func(n int) {
		prog, _ := json.Marshal(map[string]any{"progressToken": p.Meta.ProgressToken, "progress": n, "total": 2})
		onEvent(service.Event{Kind: service.Progress, Params: prog})
	}
	progress(1)
	answer, err := f.ask(ctx)
	if err != nil {
		return nil, err
	}
	progress(2)
	res, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": "answer: " + answer}}})
	return &service.Response{Server: "alpha", Result: res}, nil
}

// ask sends sampling/createMessage to the host through its registration
// and waits for the answer.
func (f *askMCPD) ask(ctx context.Context) (string, error) {
	var h askHost
	select {
	case h = <-f.hosts:
	case <-ctx.Done():
		return "", ctx.Err()
	}
	actx, cancel := context.WithCancel(h.ctx)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	res, _ := h.answer(actx, "alpha", "sampling/createMessage", json.RawMessage(`{"messages":[],"maxTokens":5}`))
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return string(res), nil
}

// sseMessages are the JSON-RPC messages of an SSE body, or of a JSON one.
func sseMessages(t *testing.T, body string) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	if strings.HasPrefix(body, "{") {
		body = "data: " + body
	}
	for _, line := range strings.Split(body, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("SSE data %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// progressTokens are the tokens of the progress notifications in msgs.
func progressTokens(msgs []map[string]json.RawMessage) []string {
	var tokens []string
	for _, m := range msgs {
		if string(m["method"]) == `"notifications/progress"` {
			var p struct {
				Token json.RawMessage `json:"progressToken"`
			}
			_ = json.Unmarshal(m["params"], &p)
			tokens = append(tokens, string(p.Token))
		}
	}
	return tokens
}

// A modern host's call that declares it answers sampling stays open to the
// child's requests (its answer may be input_required): its progress still
// reaches the host request waiting for it, first the call's own, then,
// after the input_required answer, the retry's, with the retry's token.
func TestHTTPModernOpenCallProgress(t *testing.T) {
	f := newAskMCPD()
	_, srv := serveHTTPTest(t, f)
	url := srv.URL + "/servers/alpha/mcp"
	meta := func(token string) string {
		return `"_meta":{"progressToken":"` + token + `","io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	}

	// A call that needs no input: its progress and answer on its stream.
	_, _, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"progress","arguments":{},`+meta("p")+`}}`,
		modernHeaders("tools/call", "progress")...)
	if got := progressTokens(sseMessages(t, body)); !slices.Equal(got, []string{`"p"`, `"p"`}) {
		t.Errorf("progress call: progress tokens %q, want two \"p\"; stream:\n%s", got, body)
	}

	_, _, body = post(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{},`+meta("t1")+`}}`,
		modernHeaders("tools/call", "ask")...)
	msgs := sseMessages(t, body)
	if got := progressTokens(msgs); !slices.Equal(got, []string{`"t1"`}) {
		t.Errorf("first round: progress tokens %q, want [\"t1\"]; stream:\n%s", got, body)
	}
	var first struct {
		Result struct {
			ResultType    string                     `json:"resultType"`
			InputRequests map[string]json.RawMessage `json:"inputRequests"`
			RequestState  string                     `json:"requestState"`
		} `json:"result"`
	}
	if len(msgs) == 0 {
		t.Fatalf("first round: no answer")
	}
	last, _ := json.Marshal(msgs[len(msgs)-1])
	if err := json.Unmarshal(last, &first); err != nil || first.Result.ResultType != "input_required" || len(first.Result.InputRequests) != 1 {
		t.Fatalf("first round answered %s, want input_required with one input request", last)
	}
	var key string
	for k := range first.Result.InputRequests {
		key = k
	}
	state, _ := json.Marshal(first.Result.RequestState)
	_, _, body = post(t, url, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ask","arguments":{},`+meta("t2")+
		`,"inputResponses":{"`+key+`":{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m"}},"requestState":`+string(state)+`}}`,
		modernHeaders("tools/call", "ask")...)
	msgs = sseMessages(t, body)
	if got := progressTokens(msgs); !slices.Equal(got, []string{`"t2"`}) {
		t.Errorf("retry: progress tokens %q, want [\"t2\"]; stream:\n%s", got, body)
	}
	if len(msgs) == 0 || !strings.Contains(string(msgs[len(msgs)-1]["result"]), "Paris") {
		t.Errorf("retry stream:\n%s\nwant the call's result with the host's answer", body)
	}
}

// An unsupported MCP-Protocol-Version header gets -32022 with the data a
// version error carries: the supported versions, which server/discover
// also lists, and the requested one.
func TestHTTPUnsupportedVersionHeaderData(t *testing.T) {
	_, _, srv := newHTTPTest(t)
	url := srv.URL + "/servers/alpha/mcp"
	_, _, body := post(t, url, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{`+modernMeta+`}}`,
		modernHeaders("server/discover", "")...)
	var disc struct {
		Result struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &disc); err != nil || len(disc.Result.SupportedVersions) == 0 {
		t.Fatalf("server/discover: %s", body)
	}
	status, _, body := post(t, url, `{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{"_meta":{`+
		`"io.modelcontextprotocol/protocolVersion":"v999.0.0","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		"MCP-Protocol-Version", "v999.0.0", "Mcp-Method", "server/discover")
	var e struct {
		Error struct {
			Code int64 `json:"code"`
			Data struct {
				Supported []string `json:"supported"`
				Requested string   `json:"requested"`
			} `json:"data"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || status != 400 || e.Error.Code != jsonrpc.CodeUnsupportedProtocolVersion {
		t.Fatalf("unsupported header: %d %s, want 400 with -32022", status, body)
	}
	if !slices.Equal(e.Error.Data.Supported, disc.Result.SupportedVersions) || e.Error.Data.Requested != "v999.0.0" {
		t.Errorf("error data %+v, want supported %q and requested v999.0.0", e.Error.Data, disc.Result.SupportedVersions)
	}
}

// Over stdio the same: a modern host's open call sends its progress with
// the token of the host request waiting for it, the retry's after
// input_required.
func TestStdioModernOpenCallProgress(t *testing.T) {
	f := newAskMCPD()
	sink := &recordSink{got: make(chan scopedMsg, 16)}
	send, stop := serveHostWith(t, f, sink, Options{Names: []string{"alpha"}, Warnf: t.Logf})
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	meta := func(token string) string {
		return `"_meta":{"progressToken":"` + token + `","io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
			`"io.modelcontextprotocol/clientCapabilities":{"sampling":{}}}`
	}
	// progressThen wants a progress notification with token, then the
	// answer to id; it returns the answer's result.
	progressThen := func(token, id string) json.RawMessage {
		t.Helper()
		m := sink.next(t)
		var p struct {
			Token json.RawMessage `json:"progressToken"`
		}
		_ = json.Unmarshal(m.msg.Params, &p)
		if m.msg.Method != "notifications/progress" || string(p.Token) != `"`+token+`"` {
			t.Fatalf("got %s %s %s, want progress with token %q", m.msg.Method, m.msg.Params, m.msg.Result, token)
		}
		m = sink.next(t)
		if string(m.msg.ID) != id || m.msg.Result == nil {
			t.Fatalf("got %s id %s %s, want the answer to %s", m.msg.Method, m.msg.ID, m.msg.Error, id)
		}
		return m.msg.Result
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ask","arguments":{},` + meta("t1") + `}}`)
	var first struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  string                     `json:"requestState"`
	}
	if err := json.Unmarshal(progressThen("t1", "1"), &first); err != nil || first.ResultType != "input_required" || len(first.InputRequests) != 1 {
		t.Fatalf("first round: %+v (%v), want input_required with one input request", first, err)
	}
	var key string
	for k := range first.InputRequests {
		key = k
	}
	state, _ := json.Marshal(first.RequestState)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask","arguments":{},` + meta("t2") +
		`,"inputResponses":{"` + key + `":{"role":"assistant","content":{"type":"text","text":"Paris"},"model":"m"}},"requestState":` + string(state) + `}}`)
	if res := progressThen("t2", "2"); !strings.Contains(string(res), "Paris") {
		t.Errorf("retry answered %s, want the call's result with the host's answer", res)
	}
}
