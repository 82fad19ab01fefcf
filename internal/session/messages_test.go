package session_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/session"
)

// logCall is a call of the fake's log tool whose data is data, opted in to
// log messages when level is set, delivering them to got.
func logCall(data, level string, got chan<- string) *session.Request {
	meta := ""
	if level != "" {
		meta = fmt.Sprintf(`,"_meta":{"io.modelcontextprotocol/logLevel":%q}`, level)
	}
	return &session.Request{
		Method:    "tools/call",
		Params:    json.RawMessage(fmt.Sprintf(`{"name":"log","arguments":{"data":%q}%s}`, data, meta)),
		OnMessage: func(p json.RawMessage) { got <- string(p) },
	}
}

// waitInFlight polls until n calls are pending on s.
func waitInFlight(t *testing.T, s *session.Session, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Stats().InFlight < n {
		if time.Now().After(deadline) {
			t.Fatalf("in flight = %d, want %d", s.Stats().InFlight, n)
		}
		time.Sleep(5 * time.Millisecond) // polling interval
	}
}

func TestLogMessagesReachTheirCaller(t *testing.T) {
	for _, mode := range []string{"modern", "legacy"} {
		t.Run(mode, func(t *testing.T) {
			watchers := make(chan session.Notification, 10)
			s, _ := open(t, mode, session.Options{OnNotification: func(n session.Notification) {
				if n.Method == "notifications/message" {
					watchers <- n
				}
			}})
			handshake(t, s)

			// Opted in, alone: the caller gets it, watchers do not.
			mine := make(chan string, 10)
			if got := callTool(t, s, logCall("for the caller", "debug", mine)); got != "logged" {
				t.Fatalf("log = %q", got)
			}
			select {
			case m := <-mine:
				if !strings.Contains(m, `"for the caller"`) || !strings.Contains(m, `"level":"info"`) {
					t.Errorf("caller got %s", m)
				}
			default:
				t.Error("the caller got no message (it is delivered before the response)")
			}

			// Not opted in: watchers get it, marked as sent during calls.
			none := make(chan string, 10)
			callTool(t, s, logCall("for watchers", "", none))
			if m := <-watchers; !strings.Contains(string(m.Params), `"for watchers"`) || !m.DuringCalls {
				t.Errorf("watchers got %s (during calls: %v), want it marked as sent during calls", m.Params, m.DuringCalls)
			}

			// Sent with no call in flight: watchers get it, not so marked.
			req := logCall("outside calls", "", none)
			req.Params = json.RawMessage(`{"name":"log","arguments":{"data":"outside calls","afterms":50}}`)
			callTool(t, s, req)
			if m := <-watchers; !strings.Contains(string(m.Params), `"outside calls"`) || m.DuringCalls {
				t.Errorf("watchers got %s (during calls: %v), want it not marked", m.Params, m.DuringCalls)
			}

			// Another opted-in call in flight: the message cannot be
			// attributed and goes to the watchers (legacy: any other call).
			other := make(chan string, 10)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				req := logCall("", "debug", other)
				req.Params = json.RawMessage(`{"name":"sleep","arguments":{"ms":600000},"_meta":{"io.modelcontextprotocol/logLevel":"debug"}}`)
				_, err := s.Call(ctx, req)
				errc <- err
			}()
			waitInFlight(t, s, 1)
			callTool(t, s, logCall("ambiguous", "debug", mine))
			if m := <-watchers; !strings.Contains(string(m.Params), `"ambiguous"`) || !m.DuringCalls {
				t.Errorf("watchers got %s (during calls: %v)", m.Params, m.DuringCalls)
			}
			cancel()
			if err := <-errc; !errors.Is(err, context.Canceled) {
				t.Errorf("sleep = %v", err)
			}
			if len(mine)+len(none)+len(other)+len(watchers) != 0 {
				t.Errorf("extra deliveries: caller %d, not opted in %d, other %d, watchers %d",
					len(mine), len(none), len(other), len(watchers))
			}
		})
	}
}
