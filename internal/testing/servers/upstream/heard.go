package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// Message is a JSON-RPC message an upstream server received.
type Message struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params json.RawMessage `json:"params"`
	// Status is the HTTP status the server answered its POST with (a Tap
	// knows it; 0 otherwise).
	Status int `json:"-"`
}

func (m Message) String() string {
	return fmt.Sprintf("%s id=%s params=%s status=%d", m.Method, m.ID, m.Params, m.Status)
}

// Ear knows which messages an upstream server received.
type Ear interface {
	// WaitMessage waits for a received message that match accepts; what
	// names it in the failure.
	WaitMessage(t testing.TB, what string, match func(Message) bool) Message
}

// IsCall matches a tools/call of tool whose arguments hold key = value
// (compared as JSON text).
func IsCall(tool, key string, value any) func(Message) bool {
	want, _ := json.Marshal(value)
	return func(m Message) bool {
		var p struct {
			Name      string                     `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		}
		return m.Method == "tools/call" && json.Unmarshal(m.Params, &p) == nil &&
			p.Name == tool && bytes.Equal(bytes.TrimSpace(p.Arguments[key]), want)
	}
}

// IsCancelOf matches the notifications/cancelled of the request call.
func IsCancelOf(call Message) func(Message) bool {
	return func(m Message) bool {
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		return m.Method == "notifications/cancelled" && json.Unmarshal(m.Params, &p) == nil &&
			len(call.ID) > 0 && bytes.Equal(bytes.TrimSpace(p.RequestID), bytes.TrimSpace(call.ID))
	}
}

// parseMessages reads one JSON-RPC message or a batch.
func parseMessages(body []byte) []Message {
	body = bytes.TrimSpace(body)
	var batch []Message
	if len(body) > 0 && body[0] == '[' {
		if json.Unmarshal(body, &batch) == nil {
			return batch
		}
		return nil
	}
	var m Message
	if json.Unmarshal(body, &m) != nil {
		return nil
	}
	return []Message{m}
}

// Gateway is supergateway's stdio→SSE gateway in front of
// server-everything on stdio: a 2024-11-05 HTTP+SSE server.
type Gateway struct {
	*Process
	// SSEURL is the event stream's URL (…/sse).
	SSEURL string
}

// supergatewayPackage is supergateway's directory in node_modules.
const supergatewayPackage = "supergateway"

// Supergateway runs supergateway on a free loopback port with
// server-everything on stdio behind it. It is stopped by closing its
// stdin, which makes it end server-everything too.
func Supergateway(t testing.TB) *Gateway {
	t.Helper()
	dir := NodeModules(t, everythingPackage, supergatewayPackage)
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	// exec: the server is the gateway's child itself, not a shell's.
	child := "exec " + shellQuote(node) + " " + shellQuote(entryPoint(dir, everythingPackage)) + " stdio"
	p := Start(t, exec.Command(node, entryPoint(dir, supergatewayPackage), "--stdio", child, "--outputTransport", "sse", "--port", fmt.Sprint(port)))
	p.graceful = true
	p.WaitLine(t, fmt.Sprintf("Listening on port %d", port))
	return &Gateway{Process: p, SSEURL: fmt.Sprintf("http://127.0.0.1:%d/sse", port)}
}

// gatewayRelay starts the log line of each message the gateway passes
// to the server.
const gatewayRelay = "SSE → Child ("

// WaitMessage implements Ear with the gateway's log of what it relays to
// the server.
func (g *Gateway) WaitMessage(t testing.TB, what string, match func(Message) bool) Message {
	t.Helper()
	var found Message
	g.lines.wait(t, what+" relayed by supergateway", func(l string) bool {
		_, rest, ok := strings.Cut(l, gatewayRelay)
		if !ok {
			return false
		}
		_, body, ok := strings.Cut(rest, "): ")
		if !ok {
			return false
		}
		for _, m := range parseMessages([]byte(body)) {
			if match(m) {
				found = m
				return true
			}
		}
		return false
	}, g.done, g.Output)
	return found
}
