package main

import (
	"encoding/json"
	"testing"
	"time"
)

// next reads lines until one matches f (notifications may arrive after a
// response: the SDK sends list_changed a moment after the change).
func (c *child) next(what string, f func(map[string]any) bool) map[string]any {
	c.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("stdout closed before %s", what)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				c.t.Fatalf("stdout line is not JSON: %q", line)
			}
			if f(m) {
				return m
			}
		case <-deadline:
			c.t.Fatalf("no %s", what)
		}
	}
}

func method(name string) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["method"] == name }
}

// touched checks a resources/updated notification for demo://counter with
// the send time and count in _meta.
func touched(t *testing.T, m map[string]any, count float64, sentAfter time.Time) {
	t.Helper()
	p, _ := m["params"].(map[string]any)
	if p["uri"] != counterURI {
		t.Errorf("updated uri = %v, want %s", p["uri"], counterURI)
	}
	meta, _ := p["_meta"].(map[string]any)
	sent, _ := meta[metaSent].(float64)
	if sent < float64(sentAfter.UnixNano()) || sent > float64(time.Now().UnixNano()) {
		t.Errorf("_meta %s = %v, want the send time (after %d)", metaSent, meta[metaSent], sentAfter.UnixNano())
	}
	if meta[metaCount] != count {
		t.Errorf("_meta %s = %v, want %v", metaCount, meta[metaCount], count)
	}
}

func toolNames(t *testing.T, msg map[string]any) []string {
	t.Helper()
	res, _ := msg["result"].(map[string]any)
	tools, _ := res["tools"].([]any)
	var names []string
	for _, x := range tools {
		names = append(names, x.(map[string]any)["name"].(string))
	}
	return names
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Legacy: touch announces the update of demo://counter to a subscribed
// client (only then), and toggle_tool changes the tool list with a
// list_changed notification.
func TestLegacyTouchAndToggle(t *testing.T) {
	c := startChild(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	caps := c.until(1)[0]["result"].(map[string]any)["capabilities"].(map[string]any)
	if res, _ := caps["resources"].(map[string]any); res["subscribe"] != true {
		t.Errorf("capabilities.resources = %v, want subscribe: true", caps["resources"])
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// Not subscribed yet: the touch answers without a notification.
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"touch","arguments":{}}}`)
	msgs := c.until(2)
	if len(msgs) != 1 {
		t.Fatalf("unsubscribed touch: got %v, want only the response", msgs)
	}
	if got := resultText(t, msgs[0]); got != "touched demo://counter (count 1)" {
		t.Errorf("touch = %q", got)
	}

	c.send(`{"jsonrpc":"2.0","id":3,"method":"resources/subscribe","params":{"uri":"demo://counter"}}`)
	c.until(3)
	before := time.Now()
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"touch","arguments":{}}}`)
	msgs = c.until(4)
	if len(msgs) != 2 || msgs[0]["method"] != "notifications/resources/updated" {
		t.Fatalf("subscribed touch: got %v, want the update, then the response", msgs)
	}
	touched(t, msgs[0], 2, before)

	c.send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"demo://counter"}}`)
	contents := c.until(5)[0]["result"].(map[string]any)["contents"].([]any)
	if text := contents[0].(map[string]any)["text"]; text != "2" {
		t.Errorf("demo://counter = %v, want 2", text)
	}

	for i, want := range []bool{true, false} {
		id := 10 + 2*i
		c.send(`{"jsonrpc":"2.0","id":` + itoa(id) + `,"method":"tools/call","params":{"name":"toggle_tool","arguments":{}}}`)
		c.until(id)
		c.next("tools/list_changed", method("notifications/tools/list_changed"))
		c.send(`{"jsonrpc":"2.0","id":` + itoa(id+1) + `,"method":"tools/list"}`)
		if got := contains(toolNames(t, c.until(id + 1)[0]), surpriseTool); got != want {
			t.Errorf("toggle %d: surprise listed = %v, want %v", i+1, got, want)
		}
	}
}

// Modern: touch reaches a subscriptions/listen that asked for the URI,
// tagged with its subscription id.
func TestModernTouchOnListen(t *testing.T) {
	c := startChild(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}`
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`)
	c.until(1)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"subscriptions/listen","params":{` + meta + `,"notifications":{"toolsListChanged":true,"resourceSubscriptions":["demo://counter"]}}}`)
	c.next("listen acknowledgement", method("notifications/subscriptions/acknowledged"))
	before := time.Now()
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + meta + `,"name":"touch","arguments":{}}}`)
	msgs := c.until(3)
	if len(msgs) != 2 || msgs[0]["method"] != "notifications/resources/updated" {
		t.Fatalf("touch on a listen: got %v, want the update, then the response", msgs)
	}
	touched(t, msgs[0], 1, before)
	m := msgs[0]["params"].(map[string]any)["_meta"].(map[string]any)
	if m["io.modelcontextprotocol/subscriptionId"] != float64(2) {
		t.Errorf("update _meta = %v, want the listen's subscription id 2", m)
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{` + meta + `,"name":"toggle_tool","arguments":{}}}`)
	c.next("tools/list_changed on the listen", method("notifications/tools/list_changed"))
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }
