package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mcpd-dev/mcpd/internal/jsonrpc"
	"github.com/mcpd-dev/mcpd/internal/session"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.Main() // exits when this process is a fake server
	goleak.VerifyTestMain(m)
}

var mcpdInfo = json.RawMessage(`{"name":"mcpd-test","version":"1.2.3"}`)

// open starts a fake in mode and a session on it; both are ended when the
// test ends.
func open(t testing.TB, mode string, opts session.Options, extraEnv ...string) (*session.Session, *child) {
	t.Helper()
	c := startChild(t, mode, extraEnv...)
	opts.Server = "fake"
	if opts.ClientInfo == nil {
		opts.ClientInfo = mcpdInfo
	}
	if tt, ok := t.(*testing.T); ok && opts.Logger == nil {
		opts.Logger = zaptest.NewLogger(tt)
	}
	s := session.New(c, opts)
	t.Cleanup(func() {
		c.kill()
		s.Wait()
	})
	return s, c
}

func handshake(t testing.TB, s *session.Session) session.Info {
	t.Helper()
	info, err := s.Handshake(context.Background())
	if err != nil {
		t.Fatalf("handshake: %v", err)
	}
	return info
}

// callTool calls a fake tool and returns the text of its result, failing
// the test on any error.
func callTool(t testing.TB, s *session.Session, req *session.Request) string {
	t.Helper()
	resp, err := s.Call(context.Background(), req)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	if resp.Error != nil {
		t.Fatalf("call: %v", resp.Error)
	}
	return resultText(t, resp.Result)
}

func resultText(t testing.TB, result json.RawMessage) string {
	t.Helper()
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(result, &r); err != nil || len(r.Content) != 1 {
		t.Fatalf("result %s: %v", result, err)
	}
	return r.Content[0].Text
}

func tool(name string, args string) *session.Request {
	return &session.Request{
		Method: "tools/call",
		Params: json.RawMessage(fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args)),
	}
}

func stats(t testing.TB, s *session.Session) fakemcp.Stats {
	t.Helper()
	var st fakemcp.Stats
	if err := json.Unmarshal([]byte(callTool(t, s, tool("stats", `{}`))), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestHandshake(t *testing.T) {
	tests := []struct {
		name     string
		mode     string
		protocol string
		env      []string
		want     session.Info
		// counts of methods the child must have seen
		counts map[string]int
	}{
		{
			name: "auto modern", mode: "modern",
			want: session.Info{Era: session.EraModern, ProtocolVersion: jsonrpc.ModernVersion,
				SupportedVersions: []string{"2026-07-28", "2025-11-25"}},
			counts: map[string]int{"server/discover": 1, "initialize": 0},
		},
		{
			name: "auto dual prefers modern", mode: "dual",
			want: session.Info{Era: session.EraModern, ProtocolVersion: jsonrpc.ModernVersion,
				SupportedVersions: []string{"2026-07-28", "2025-11-25"}},
			counts: map[string]int{"server/discover": 1, "initialize": 0},
		},
		{
			name: "auto legacy falls back on -32601", mode: "legacy",
			want:   session.Info{Era: session.EraLegacy, ProtocolVersion: jsonrpc.LegacyVersion},
			counts: map[string]int{"server/discover": 1, "initialize": 1, "notifications/initialized": 1},
		},
		{
			name: "auto silent probe falls back after the timeout", mode: "silentprobe",
			want:   session.Info{Era: session.EraLegacy, ProtocolVersion: jsonrpc.LegacyVersion},
			counts: map[string]int{"server/discover": 1, "initialize": 1, "notifications/initialized": 1},
		},
		{
			name: "protocol legacy skips the probe", mode: "dual", protocol: session.ProtocolLegacy,
			want:   session.Info{Era: session.EraLegacy, ProtocolVersion: jsonrpc.LegacyVersion},
			counts: map[string]int{"server/discover": 0, "initialize": 1, "notifications/initialized": 1},
		},
		{
			name: "protocol modern", mode: "dual", protocol: session.ProtocolModern,
			want: session.Info{Era: session.EraModern, ProtocolVersion: jsonrpc.ModernVersion,
				SupportedVersions: []string{"2026-07-28", "2025-11-25"}},
			counts: map[string]int{"server/discover": 1, "initialize": 0},
		},
		{
			name: "-32022 retries with a supported modern version", mode: "modern",
			env: []string{fakemcp.EnvVersions + "=2025-11-25,2026-12-01"},
			want: session.Info{Era: session.EraModern, ProtocolVersion: "2026-12-01",
				SupportedVersions: []string{"2025-11-25", "2026-12-01"}},
			counts: map[string]int{"server/discover": 2, "initialize": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The probe's bound is only waited out by a legacy server that
			// never answers; a modern one must answer within it even on
			// a loaded machine, hence not much less than the default.
			s, _ := open(t, tt.mode, session.Options{Protocol: tt.protocol, DiscoverTimeout: 2 * time.Second}, tt.env...)
			info := handshake(t, s)
			if string(info.ServerInfo) != `{"name":"fakemcp","version":"1.0.0"}` {
				t.Errorf("ServerInfo = %s", info.ServerInfo)
			}
			if !strings.Contains(string(info.Capabilities), `"tools"`) || info.Instructions == "" {
				t.Errorf("Capabilities = %s, Instructions = %q", info.Capabilities, info.Instructions)
			}
			got := info
			got.ServerInfo, got.Capabilities, got.Instructions = nil, nil, ""
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Info mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(info, s.Info()); diff != "" {
				t.Errorf("Info() differs from Handshake's (-handshake +Info):\n%s", diff)
			}
			// A call works in the negotiated era (the fake rejects
			// envelope-less requests before initialize and envelope-less
			// requests in modern mode).
			if got := callTool(t, s, tool("echo", `{"message":"hi"}`)); got != "hi" {
				t.Errorf("echo = %q", got)
			}
			st := stats(t, s)
			for m, n := range tt.counts {
				if st.Methods[m] != n {
					t.Errorf("child saw %d %s, want %d (all: %v)", st.Methods[m], m, n, st.Methods)
				}
			}
		})
	}
}

func TestHandshakeErrors(t *testing.T) {
	tests := []struct {
		name     string
		mode     string
		protocol string
		env      []string
		want     error
	}{
		{name: "exit on probe", mode: "exitonprobe", want: session.ErrExitedAfterProbe},
		{name: "modern required but legacy", mode: "legacy", protocol: session.ProtocolModern, want: session.ErrHandshake},
		{name: "modern required but silent", mode: "silentprobe", protocol: session.ProtocolModern, want: session.ErrHandshake},
		{name: "-32022 without a modern version", mode: "modern",
			env: []string{fakemcp.EnvVersions + "=2025-11-25,2025-06-18"}, want: session.ErrHandshake},
		{name: "modern only server asked for legacy", mode: "modern", protocol: session.ProtocolLegacy, want: session.ErrHandshake},
		{name: "unknown protocol", mode: "dual", protocol: "sideways", want: session.ErrHandshake},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The probe's bound is only waited out by a legacy server that
			// never answers; a modern one must answer within it even on
			// a loaded machine, hence not much less than the default.
			s, _ := open(t, tt.mode, session.Options{Protocol: tt.protocol, DiscoverTimeout: 2 * time.Second}, tt.env...)
			_, err := s.Handshake(context.Background())
			if !errors.Is(err, tt.want) {
				t.Fatalf("Handshake error = %v, want %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), `"fake"`) {
				t.Errorf("error %q does not name the server", err)
			}
			if s.Info().Era != "" {
				t.Errorf("Info after failed handshake = %+v", s.Info())
			}
		})
	}
}

// TestInitializeBoundedByContext: initialize against a child that never
// answers it ends with ctx, and is never cancelled on the wire ("the client
// must never cancel initialize").
func TestInitializeBoundedByContext(t *testing.T) {
	s, c := open(t, "legacy,hanginit", session.Options{Protocol: session.ProtocolLegacy})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.Handshake(ctx)
		errc <- err
	}()
	c.waitStderr("recv initialize 1")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Handshake = %v, want context.Canceled", err)
	}
	// Anything the session wrote before this marker arrived before it.
	if err := s.Notify(t.Context(), "notifications/marker", nil); err != nil {
		t.Fatal(err)
	}
	c.waitStderr("recv notifications/marker")
	if c.hasStderr("recv notifications/cancelled") {
		t.Fatal("initialize was cancelled on the wire")
	}
}

func TestModernEnvelope(t *testing.T) {
	s, _ := open(t, "modern", session.Options{})
	handshake(t, s)

	var meta map[string]json.RawMessage
	decode := func(text string) {
		t.Helper()
		meta = nil
		if err := json.Unmarshal([]byte(text), &meta); err != nil {
			t.Fatalf("meta %q: %v", text, err)
		}
	}
	decode(callTool(t, s, tool("meta", `{}`)))
	want := map[string]string{
		"io.modelcontextprotocol/protocolVersion":    `"2026-07-28"`,
		"io.modelcontextprotocol/clientCapabilities": `{}`,
		"io.modelcontextprotocol/clientInfo":         string(mcpdInfo),
	}
	for k, v := range want {
		if string(meta[k]) != v {
			t.Errorf("_meta[%s] = %s, want %s", k, meta[k], v)
		}
	}

	// The app's identity and capabilities, and its other _meta keys, reach the child.
	req := &session.Request{
		Method:             "tools/call",
		Params:             json.RawMessage(`{"name":"meta","_meta":{"dev.app/trace":"abc","io.modelcontextprotocol/protocolVersion":"1999-01-01"}}`),
		ClientInfo:         json.RawMessage(`{"name":"app","version":"9"}`),
		ClientCapabilities: json.RawMessage(`{"elicitation":{}}`),
	}
	decode(callTool(t, s, req))
	want = map[string]string{
		"io.modelcontextprotocol/protocolVersion":    `"2026-07-28"`,
		"io.modelcontextprotocol/clientCapabilities": `{"elicitation":{}}`,
		"io.modelcontextprotocol/clientInfo":         `{"name":"app","version":"9"}`,
		"dev.app/trace":                              `"abc"`,
	}
	for k, v := range want {
		if string(meta[k]) != v {
			t.Errorf("_meta[%s] = %s, want %s", k, meta[k], v)
		}
	}

	// A modern result passes through unchanged.
	resp, err := s.Call(context.Background(), &session.Request{Method: "resources/read", Params: json.RawMessage(`{"uri":"fake://hello"}`)})
	if err != nil || resp.Error != nil {
		t.Fatalf("read: %v %v", err, resp.Error)
	}
	for _, f := range []string{`"resultType":"complete"`, `"ttlMs":60000`, `"cacheScope":"public"`, `"text":"hello"`} {
		if !strings.Contains(string(resp.Result), f) {
			t.Errorf("result %s lacks %s", resp.Result, f)
		}
	}
	// JSON-RPC errors of the child come back as Response.Error.
	resp, err = s.Call(context.Background(), &session.Request{Method: "resources/read", Params: json.RawMessage(`{"uri":"fake://nope"}`)})
	if err != nil || resp.Error == nil || resp.Error.Code != -32602 || resp.Result != nil {
		t.Fatalf("read missing = %+v, %v", resp, err)
	}
	if !strings.Contains(string(resp.Error.Data), "fake://nope") {
		t.Errorf("error data = %s", resp.Error.Data)
	}
}

func TestLegacyParamsUnchanged(t *testing.T) {
	s, _ := open(t, "legacy", session.Options{})
	handshake(t, s)
	got := callTool(t, s, &session.Request{Method: "tools/call", Params: json.RawMessage(`{"name":"meta","_meta":{"dev.app/x":1}}`)})
	if got != `{"dev.app/x":1}` {
		t.Errorf("legacy child saw _meta %s", got)
	}
	if got := callTool(t, s, tool("meta", `{}`)); got != "null" {
		t.Errorf("legacy child saw _meta %s, want none", got)
	}
}

func TestInvalidMessageCountedAndWarned(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	s, _ := open(t, "legacy", session.Options{Logger: zap.New(core)})
	handshake(t, s)
	if got := callTool(t, s, tool("invalid", `{}`)); got != "ok" {
		t.Fatalf("invalid = %q", got)
	}
	if st := s.Stats(); st.MessagesInvalid != 1 {
		t.Errorf("MessagesInvalid = %d, want 1", st.MessagesInvalid)
	}
	warned := logs.FilterLevelExact(zap.WarnLevel).FilterMessageSnippet("skipped").All()
	if len(warned) != 1 {
		t.Fatalf("warnings about skipped messages: %v, want 1", logs.All())
	}
	f := warned[0].ContextMap()
	if p, _ := f["message_prefix"].(string); !strings.Contains(p, `"jsonrpc":"2.0"`) || f["server"] != "fake" {
		t.Errorf("warning fields %v: want the server and the message's prefix", f)
	}
}

func TestServerRequests(t *testing.T) {
	t.Run("ping answered by the session", func(t *testing.T) {
		s, _ := open(t, "legacy", session.Options{})
		handshake(t, s)
		if got := callTool(t, s, tool("ping", `{}`)); got != "{}" {
			t.Errorf("ping answer = %q", got)
		}
	})
	t.Run("sampling without handler", func(t *testing.T) {
		s, _ := open(t, "legacy", session.Options{})
		handshake(t, s)
		if got := callTool(t, s, tool("sample", `{}`)); !strings.HasPrefix(got, "error -32601:") {
			t.Errorf("sample answer = %q", got)
		}
	})
	t.Run("sampling routed to OnRequest", func(t *testing.T) {
		var gotMethod, gotParams string
		s, _ := open(t, "legacy", session.Options{OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			gotMethod, gotParams = method, string(params)
			if method != "sampling/createMessage" {
				return nil, &session.RPCError{Code: -32601, Message: "no"}
			}
			return json.RawMessage(`{"role":"assistant","content":{"type":"text","text":"Paris."},"model":"m"}`), nil
		}})
		handshake(t, s)
		got := callTool(t, s, tool("sample", `{}`))
		if !strings.Contains(got, `"Paris."`) {
			t.Errorf("sample answer = %q", got)
		}
		if gotMethod != "sampling/createMessage" || !strings.Contains(gotParams, `"maxTokens":10`) {
			t.Errorf("handler got %s %s", gotMethod, gotParams)
		}
	})
	t.Run("handler error returned to the child", func(t *testing.T) {
		s, _ := open(t, "legacy", session.Options{OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			return nil, &session.RPCError{Code: -32000, Message: "no model"}
		}})
		handshake(t, s)
		if got := callTool(t, s, tool("sample", `{}`)); got != "error -32000: no model" {
			t.Errorf("sample answer = %q", got)
		}
	})
	t.Run("child cancels its request", func(t *testing.T) {
		cancelled := make(chan error, 1)
		s, _ := open(t, "legacy", session.Options{OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			<-ctx.Done() // only the child's notifications/cancelled ends this
			cancelled <- ctx.Err()
			return json.RawMessage(`{}`), nil
		}})
		handshake(t, s)
		if got := callTool(t, s, tool("sample", `{"cancel":true}`)); got != "cancelled" {
			t.Errorf("sample answer = %q (the session answered a cancelled request)", got)
		}
		if err := <-cancelled; !errors.Is(err, context.Canceled) {
			t.Errorf("handler ctx = %v", err)
		}
	})
	t.Run("handlers end with the session", func(t *testing.T) {
		started := make(chan struct{})
		s, c := open(t, "legacy", session.Options{OnRequest: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *session.RPCError) {
			close(started)
			<-ctx.Done()
			return nil, nil
		}})
		handshake(t, s)
		errc := make(chan error, 1)
		go func() {
			_, err := s.Call(context.Background(), tool("sample", `{}`))
			errc <- err
		}()
		<-started
		c.kill()
		s.Wait() // returns only once the handler returned
		if err := <-errc; !errors.Is(err, session.ErrClosed) {
			t.Errorf("call = %v", err)
		}
	})
}

func TestNotifications(t *testing.T) {
	got := make(chan session.Notification, 10)
	s, _ := open(t, "legacy", session.Options{OnNotification: func(n session.Notification) { got <- n }})
	handshake(t, s)
	callTool(t, s, tool("changed", `{"kind":"tools"}`))
	callTool(t, s, tool("changed", `{"uri":"fake://hello"}`))
	n := <-got
	if n.Method != "notifications/tools/list_changed" {
		t.Errorf("first notification = %+v", n)
	}
	n = <-got
	if n.Method != "notifications/resources/updated" || string(n.Params) != `{"uri":"fake://hello"}` {
		t.Errorf("second notification = %s %s", n.Method, n.Params)
	}
}

func TestGarbageLines(t *testing.T) {
	s, c := open(t, "dual,garbage", session.Options{}, fakemcp.EnvOversize+"=100")
	info := handshake(t, s)
	if info.Era != session.EraModern {
		t.Errorf("era = %s", info.Era)
	}
	for i := range 3 {
		msg := fmt.Sprintf("hi %d", i)
		if got := callTool(t, s, tool("echo", fmt.Sprintf(`{"message":%q}`, msg))); got != msg {
			t.Errorf("echo = %q", got)
		}
	}
	// The {"pad":...} object is neither request, notification nor response.
	if st := s.Stats(); st.MessagesInvalid != 1 {
		t.Errorf("MessagesInvalid = %d, want 1", st.MessagesInvalid)
	}
	if st := c.Stats(); st.LinesSkipped == 0 {
		t.Errorf("transport skipped no garbage lines: %+v", st)
	}
}

func TestNotifyAfterExit(t *testing.T) {
	s, c := open(t, "legacy", session.Options{})
	handshake(t, s)
	c.kill()
	<-s.Done()
	if err := s.Notify(t.Context(), "notifications/roots/list_changed", nil); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Notify after exit = %v, want ErrClosed", err)
	}
}
