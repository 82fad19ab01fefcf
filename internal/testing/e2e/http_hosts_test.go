package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sessionAs initializes a 2025-11-25 session at url as the host name,
// declaring caps, and returns its id.
func sessionAs(t *testing.T, url, name, caps string) string {
	t.Helper()
	status, hdr, body := rawPost(t, url, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"`+name+`","version":"1"}}}`)
	sid := hdr.Get("Mcp-Session-Id")
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize at %s = %d %q %s", url, status, sid, body)
	}
	if status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Mcp-Session-Id", sid); status != http.StatusAccepted {
		t.Fatalf("initialized = %d %s", status, body)
	}
	return sid
}

// sseStream POSTs body in session sid and returns the response's SSE
// messages as they come; the channel closes when the response ends.
func sseStream(t *testing.T, ctx context.Context, url, sid, body string) <-chan map[string]json.RawMessage {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	out := make(chan map[string]json.RawMessage, 16)
	go func() { // ends with the response (the test's context bounds it)
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				line = d
			} else if !strings.HasPrefix(line, "{") {
				continue
			}
			var m map[string]json.RawMessage
			if json.Unmarshal([]byte(line), &m) == nil {
				out <- m
			}
		}
	}()
	return out
}

// A server's request during one HTTP host's call goes to that host, on the
// call's own POST stream, not to the host that registered last nor to a
// GET stream neither host opened: each session is an app of its own, and
// status lists it by its host's name.
func TestHTTPChildRequestReachesTheCallingSession(t *testing.T) {
	d, base := startHTTPDaemon(t, map[string]map[string]any{"fake": fakeServer("legacy")})
	url := base + "/servers/fake/mcp"
	caps := `{"sampling":{}}`
	alpha := sessionAs(t, url, "alpha-host", caps)
	beta := sessionAs(t, url, "beta-host", caps) // registered last
	for _, sid := range []string{alpha, beta} {  // both are registered as hosts once they have listed
		if status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", sid); status != http.StatusOK {
			t.Fatalf("tools/list = %d %s", status, body)
		}
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 20*time.Second)
	defer cancel()
	msgs := sseStream(t, ctx, url, alpha, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"sample","arguments":{}}}`)
	var answered bool
	for m := range msgs {
		switch {
		case string(m["method"]) == `"sampling/createMessage"`:
			answer := `{"jsonrpc":"2.0","id":` + string(m["id"]) + `,"result":{"role":"assistant","content":{"type":"text","text":"answered by alpha"},"model":"m"}}`
			if status, _, body := rawPost(t, url, answer, "Mcp-Session-Id", alpha); status != http.StatusAccepted {
				t.Fatalf("alpha's answer = %d %s", status, body)
			}
			answered = true
		case string(m["id"]) == `"call-1"`:
			if !answered || !strings.Contains(string(m["result"]), "answered by alpha") {
				t.Fatalf("alpha's call answered %s %s (sampling request seen on its stream: %v), want alpha's own sampling answer", m["result"], m["error"], answered)
			}
			st := d.status(d.client())
			names := map[string]bool{}
			for _, a := range st.GetApps() {
				names[a.GetName()] = true
			}
			if !names["alpha-host"] || !names["beta-host"] {
				t.Errorf("status lists apps %v, want each session by its host's name", names)
			}
			return
		}
	}
	t.Fatalf("alpha's call stream ended without its answer (sampling request seen: %v)", answered)
}

// A host's notifications/cancelled reaches the child with the host's
// reason; a call cancelled without one says its client cancelled it.
func TestHTTPHostCancelReasonReachesTheChild(t *testing.T) {
	_, base := startHTTPDaemon(t, map[string]map[string]any{"fake": fakeServer("legacy")})
	url := base + "/servers/fake/mcp"
	sid := legacySession(t, url)
	stats := func() (st struct {
		Methods       map[string]int `json:"methods"`
		CancelReasons []string       `json:"cancelReasons"`
	}) {
		_, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"stats","arguments":{}}}`, "Mcp-Session-Id", sid)
		var r struct {
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(body), &r) == nil && len(r.Result.Content) == 1 {
			_ = json.Unmarshal([]byte(r.Result.Content[0].Text), &st)
		}
		return st
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 30*time.Second)
	defer cancel()
	sleep := make(chan struct{})
	go func() { // answered never: it is cancelled; ends with ctx
		defer close(sleep)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"sleep","arguments":{"ms":60000}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", sid)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	poll(t, "the sleep call to reach the child", func() (bool, error) { return stats().Methods["tools/call"] >= 2, nil })
	if status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"user pressed stop"}}`, "Mcp-Session-Id", sid); status != http.StatusAccepted {
		t.Fatalf("notifications/cancelled = %d %s", status, body)
	}
	var reasons []string
	poll(t, "the child to see the cancel", func() (bool, error) { reasons = stats().CancelReasons; return len(reasons) > 0, nil })
	if reasons[0] != "cancelled by the host: user pressed stop" {
		t.Errorf("the child's reason = %q, want the host's", reasons[0])
	}
	cancel()
	<-sleep
}
