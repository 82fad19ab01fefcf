package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

const elicitComplete = "notifications/elicitation/complete"

// A child's notifications/elicitation/complete reaches the host that was
// sent its url elicitation, through every door: a gRPC app's Host stream,
// the stdio bridge (one server and --all), and a legacy HTTP session's GET
// stream. Another host declaring the same is not sent it.
func TestElicitationCompleteReachesItsHost(t *testing.T) {
	d, base := startHTTPDaemon(t, map[string]map[string]any{"fake": fakeServer("legacy")})
	bystander := newLegacyBridgeHost(t, d, `{"elicitation":{"form":{},"url":{}}}`, "fake")
	t.Run("grpc", func(t *testing.T) { elicitCompleteGRPC(t, d) })
	for _, tc := range []struct{ name, tool string }{{"bridge", "elicit_url"}, {"bridge all", "fake__elicit_url"}} {
		t.Run(tc.name, func(t *testing.T) {
			arg := "fake"
			if tc.name == "bridge all" {
				arg = "--all"
			}
			h := newLegacyBridgeHost(t, d, `{"elicitation":{"url":{}}}`, arg).h
			id := "el-" + strings.ReplaceAll(tc.name, " ", "-")
			h.send(t, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"`+tc.tool+`","arguments":{"id":"`+id+`"}}}`)
			var answered, completed bool
			for !answered || !completed {
				m := h.next(t)
				switch {
				case m.Method == "elicitation/create":
					h.send(t, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{"action":"accept"}}`)
				case m.Method == elicitComplete:
					if !strings.Contains(string(m.Params), `"`+id+`"`) {
						t.Errorf("completion %s, want elicitationId %s", m.Params, id)
					}
					completed = true
				case string(m.ID) == "2":
					if m.Error != nil || !strings.Contains(string(m.Result), "accept") {
						t.Fatalf("call = %s %v", m.Result, m.Error)
					}
					answered = true
				}
			}
		})
	}
	t.Run("http legacy", func(t *testing.T) { elicitCompleteHTTP(t, base+"/servers/fake/mcp") })
	// The bystander, registered first and never asked, reads up to the
	// answer of its own request: no completion is among what it was sent.
	_, asked := bystander.call(t, "tools/list", "{}")
	if len(asked) != 0 {
		t.Errorf("the bystander was asked %v", asked)
	}
	bystander.h.send(t, `{"jsonrpc":"2.0","id":"last","method":"ping"}`)
	for {
		m := bystander.h.next(t)
		if m.Method == elicitComplete {
			t.Fatalf("the bystander was sent %s", m.Params)
		}
		if string(m.ID) == `"last"` {
			break
		}
	}
}

// elicitCompleteGRPC: an app registered as host (elicitation.url) calls
// elicit_url, answers the url elicitation on its Host stream, and is sent
// the completion there.
func elicitCompleteGRPC(t *testing.T, d *daemon) {
	c := d.client()
	ctx, cancel := context.WithTimeout(ctxT(t), waitTimeout)
	defer cancel()
	stream, err := c.Host(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reg := &mcpdv1.HostRegistration{Elicitation: true, ElicitationUrl: true, Servers: []string{"fake"}}
	if err := stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Register{Register: reg}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatalf("registration: %v", err)
	}
	notes := make(chan *mcpdv1.HostNotification, 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	wg.Go(func() {
		for {
			msg, err := stream.Recv()
			if err != nil {
				return
			}
			if call := msg.GetCall(); call != nil {
				_ = stream.Send(&mcpdv1.HostRequest{Msg: &mcpdv1.HostRequest_Answer{Answer: &mcpdv1.HostAnswer{
					CallId: call.GetCallId(), ResultJson: `{"action":"accept"}`}}})
			}
			if n := msg.GetNotification(); n != nil {
				notes <- n
			}
		}
	})
	resp, _, err := callTool(ctx, c, &mcpdv1.CallToolRequest{Server: "fake", Tool: "elicit_url", ArgumentsJson: `{"id":"el-grpc"}`})
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, resp); !strings.Contains(got, "accept") {
		t.Fatalf("call = %s", got)
	}
	select {
	case n := <-notes:
		if n.GetServer() != "fake" || n.GetMethod() != elicitComplete || !strings.Contains(n.GetParamsJson(), `"el-grpc"`) {
			t.Errorf("notification %v", n)
		}
	case <-ctx.Done():
		t.Fatal("no completion on the Host stream")
	}
}

// elicitCompleteHTTP: a legacy HTTP session declaring elicitation.url
// answers the url elicitation on its call's stream and finds the
// completion on its GET stream.
func elicitCompleteHTTP(t *testing.T, url string) {
	sid := sessionAs(t, url, "http-host", `{"elicitation":{"url":{}}}`)
	if status, _, body := rawPost(t, url, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, "Mcp-Session-Id", sid); status != http.StatusOK {
		t.Fatalf("tools/list = %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(ctxT(t), 30*time.Second)
	defer cancel()
	msgs := sseStream(t, ctx, url, sid, `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"elicit_url","arguments":{"id":"el-http"}}}`)
	completed := false
	for m := range msgs {
		switch {
		case string(m["method"]) == `"elicitation/create"`:
			answer := `{"jsonrpc":"2.0","id":` + string(m["id"]) + `,"result":{"action":"accept"}}`
			if status, _, body := rawPost(t, url, answer, "Mcp-Session-Id", sid); status != http.StatusAccepted {
				t.Fatalf("answer = %d %s", status, body)
			}
		case string(m["method"]) == `"`+elicitComplete+`"`:
			completed = true // the call's stream may carry it, if still open
		case string(m["id"]) == `"call-1"`:
			if !strings.Contains(string(m["result"]), "accept") {
				t.Fatalf("call = %s %s", m["result"], m["error"])
			}
		}
	}
	if completed {
		t.Fatal("the completion came on the call's stream, not as unsolicited output")
	}
	for m := range getStream(t, ctx, url, sid) {
		if string(m["method"]) == `"`+elicitComplete+`"` {
			var p struct{ ElicitationID string }
			_ = json.Unmarshal(m["params"], &p)
			if p.ElicitationID != "el-http" {
				t.Errorf("completion %s", m["params"])
			}
			return
		}
	}
	t.Fatal("the GET stream ended without the completion")
}

// getStream opens the GET stream of session sid and returns its messages
// as they come; the channel closes when the stream ends (ctx bounds it).
func getStream(t *testing.T, ctx context.Context, url, sid string) <-chan map[string]json.RawMessage {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s = %d", url, resp.StatusCode)
	}
	out := make(chan map[string]json.RawMessage, 16)
	go func() { // ends with the response (ctx bounds it)
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				var m map[string]json.RawMessage
				if json.Unmarshal([]byte(d), &m) == nil {
					out <- m
				}
			}
		}
	}()
	return out
}
