package relay

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The tracker sees the host's requests in flight through any chunking,
// forgets the cancelled and the answered, and keeps what a new bridge
// must be told, open listens included (replayed, not failed).
func TestRelayTracker(t *testing.T) {
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"method":"resources/subscribe","params":{"uri":"a://1"},"jsonrpc":"2.0","id":"s1"}`,
		`{"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":"a://2"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"resources/unsubscribe","params":{"uri":"a://1"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"x","arguments":{"id":99}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"slow"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`,
		`{"jsonrpc":"2.0","id":"mcpd-1","result":{}}`,
		`not json`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"` + strings.Repeat("x", 300) + `"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`,
		`{"jsonrpc":"2.0","id":"L2","method":"subscriptions/listen","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"L2"}}`,
		`{"jsonrpc":"2.0","id":8,"method":"pi`,
	}, "\n")
	for _, size := range []int{1, 7, 64, len(in)} {
		tr := tracker{max: 200}
		for p := []byte(in); len(p) > 0; {
			n := min(size, len(p))
			tr.feed(p[:n])
			p = p[n:]
		}
		for _, id := range []string{"0", `"s1"`, "2", "3"} {
			tr.answered([]byte(id), false)
		}
		var got []string
		for k := range tr.inflight {
			got = append(got, k)
		}
		if len(got) != 3 || tr.inflight["4"] == nil || tr.inflight["7"] == nil || tr.inflight[`"L"`] == nil {
			t.Errorf("chunks of %d: in flight %q, want 4, 7 and L (6 is over --max-line-size)", size, got)
		}
		if start, skip := tr.partial(); string(start) != `{"jsonrpc":"2.0","id":8,"method":"pi` || skip {
			t.Errorf("chunks of %d: partial %q %v", size, start, skip)
		}
		replay, gate := tr.replay()
		close(gate.initAnswered)
		data, _ := io.ReadAll(replay)
		want := `{"jsonrpc":"2.0","id":"mcpdctl-replay-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"h"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":"mcpdctl-replay-2","method":"resources/subscribe","params":{"uri":"a://2"}}
{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}
`
		if diff := cmp.Diff(want, string(data)); diff != "" {
			t.Errorf("chunks of %d: replay (-want +got):\n%s", size, diff)
		}
		out := string(tr.failInFlight(nil, "mcpd is not running"))
		if strings.Count(out, "\n") != 2 || !strings.Contains(out, `{"jsonrpc":"2.0","id":4,"error":{"code":-32603,"message":"mcpd is not running"}}`) {
			t.Errorf("chunks of %d: answers %q", size, out)
		}
	}
}

// The demultiplexer passes mcpd's whole messages through as they come,
// holds back a message cut at the end of the output, takes its warning
// lines out for stderr, and sees each answer's id, not the ids of the
// bridge's own requests.
func TestRelayDemux(t *testing.T) {
	in := "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{\"id\":1}}\n" +
		"!bridge: server \"x\" is unavailable\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":\"mcpd-1\",\"method\":\"roots/list\"}\n" +
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{}}\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":\"a b\",\"error\":{\"code\":1,\"message\":\"m\"}}\n" +
		"{\"jsonrpc\":\"2.0\",\"id\":9,\"res"
	for _, size := range []int{1, 5, len(in)} {
		var out bytes.Buffer
		var warnings, ids []string
		var d demux
		warnf := func(f string, a ...any) {
			warnings = append(warnings, strings.TrimPrefix(f, "%s")+string(a[0].([]byte)))
		}
		for p := []byte(in); len(p) > 0; {
			n := min(size, len(p))
			d.split(p[:n], &out, warnf, func(id []byte, _ bool) { ids = append(ids, string(id)) })
			p = p[n:]
		}
		wantOut := strings.Replace(in, "!bridge: server \"x\" is unavailable\n", "", 1)
		wantOut = strings.TrimSuffix(wantOut, "{\"jsonrpc\":\"2.0\",\"id\":9,\"res")
		if out.String() != wantOut {
			t.Errorf("chunks of %d: out %q", size, out.String())
		}
		if diff := cmp.Diff([]string{`bridge: server "x" is unavailable`}, warnings); diff != "" {
			t.Errorf("chunks of %d: warnings (-want +got):\n%s", size, diff)
		}
		if diff := cmp.Diff([]string{"4", `"a b"`}, ids); diff != "" {
			t.Errorf("chunks of %d: answered (-want +got):\n%s", size, diff)
		}
		if !d.cut() {
			t.Errorf("chunks of %d: no cut message at the end of the input", size)
		}
	}
}

// A message of any length is held back until its end: a cut leaves
// nothing of it out. Shorter messages that span chunks reach the host
// whole, each in one write.
func TestRelayDemuxHoldsBackEveryMessage(t *testing.T) {
	small := `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n"
	big := `{"jsonrpc":"2.0","id":2,"result":{"text":"` + strings.Repeat("x", 2<<20) + `"}}` + "\n"
	in := small + big + small
	for _, size := range []int{7, 64 << 10, 256 << 10} {
		var w writeLog
		var d demux
		var ids []string
		for p := []byte(in + big[:len(big)-5]); len(p) > 0; {
			n := min(size, len(p))
			d.split(p[:n], &w, t.Logf, func(id []byte, _ bool) { ids = append(ids, string(id)) })
			p = p[n:]
		}
		if got := w.String(); got != in {
			t.Errorf("chunks of %d: %d bytes out, want the %d of the whole messages", size, len(got), len(in))
		}
		if !d.cut() {
			t.Errorf("chunks of %d: the cut message was not held", size)
		}
		if w.writes[0] != small && size > len(small) {
			t.Errorf("chunks of %d: first write %.40q, want the first message whole", size, w.writes[0])
		}
		if diff := cmp.Diff([]string{"1", "2", "1"}, ids); diff != "" {
			t.Errorf("chunks of %d: answered (-want +got):\n%s", size, diff)
		}
	}
	// Chunks of 7 bytes: each small message is one write, whole.
	var w writeLog
	var d demux
	for p := []byte(small + small); len(p) > 0; p = p[min(7, len(p)):] {
		d.split(p[:min(7, len(p))], &w, t.Logf, func([]byte, bool) {})
	}
	if diff := cmp.Diff([]string{small, small}, w.writes); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
}

// writeLog records each write.
type writeLog struct{ writes []string }

func (w *writeLog) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}

func (w *writeLog) String() string { return strings.Join(w.writes, "") }

// A request reusing an id in flight (which mcpd refuses and answers) keeps
// the id in flight until both are answered, and a second initialize
// (refused) leaves the session's first; an initialize that failed is
// forgotten, so the host's next one is the session's.
func TestRelayTrackerReusedIDs(t *testing.T) {
	var tr tracker
	tr.max = 1 << 10
	tr.feed([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"x"}}` + "\n"))
	tr.answered([]byte("1"), true)
	tr.feed([]byte(`{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2024-11-05"}}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}` + "\n" +
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow"}}` + "\n"))
	tr.answered([]byte("2"), false)
	tr.answered([]byte("3"), true)
	if tr.initialize == nil || string(tr.initialize.Params) != `{"protocolVersion":"2025-06-18"}` {
		t.Errorf("initialize kept %v, want the first that succeeded (id 2)", tr.initialize)
	}
	tr.answered([]byte("7"), true) // the refusal of the second
	if tr.inflight["7"] == nil {
		t.Fatal("id 7 forgotten at the refusal of its reuse; the first is still in flight")
	}
	tr.answered([]byte("7"), false)
	if len(tr.inflight) != 0 {
		t.Errorf("in flight %v after every answer, want none", tr.inflight)
	}
}

// A session that returns to the relay replays itself to the new bridge:
// the answers to the replayed requests are dropped, whole, wherever the
// chunks cut them, the initialize's opens the gate, and the host's own
// messages around them pass.
func TestRelayDemuxDropsReplayAnswers(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":"` + replayPrefix + `1","result":{"protocolVersion":"2025-11-25"}}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":"` + replayPrefix + `2","result":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n"
	want := `{"jsonrpc":"2.0","id":3,"result":{}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/message","params":{}}` + "\n"
	for _, size := range []int{1, 9, len(in)} {
		gate := &replayGate{initID: []byte(`"` + replayPrefix + `1"`), initAnswered: make(chan struct{})}
		d := demux{drop: gate.drop}
		var out bytes.Buffer
		var ids []string
		for p := []byte(in); len(p) > 0; p = p[min(size, len(p)):] {
			d.split(p[:min(size, len(p))], &out, t.Logf, func(id []byte, _ bool) { ids = append(ids, string(id)) })
		}
		if out.String() != want {
			t.Errorf("chunks of %d: out %q", size, out.String())
		}
		if diff := cmp.Diff([]string{"3"}, ids); diff != "" {
			t.Errorf("chunks of %d: answered (-want +got):\n%s", size, diff)
		}
		select {
		case <-gate.initAnswered:
		default:
			t.Errorf("chunks of %d: the gate stayed shut", size)
		}
	}
}
