package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// envChild makes the test binary run the demo server instead of the tests.
const envChild = "MCPD_DEMO_SERVER_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envChild) == "1" {
		os.Args = append(os.Args[:1], "--name", "demo-test")
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// child is the demo server running as a real process on real pipes.
type child struct {
	t     *testing.T
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startChild(t *testing.T) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), envChild+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{t: t, cmd: cmd, stdin: stdin, lines: make(chan string, 100)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(c.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		c.stdin.Close()
		waited := make(chan error, 1)
		go func() { <-done; waited <- cmd.Wait() }()
		select {
		case err := <-waited:
			if err != nil {
				t.Errorf("demo server exit: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("demo server did not exit after stdin closed")
			cmd.Process.Kill()
			for range c.lines {
			}
			<-waited
		}
	})
	return c
}

func (c *child) send(msg string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, msg+"\n"); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// until reads lines up to the response with the given id, returning every
// line read.
func (c *child) until(id int) []map[string]any {
	c.t.Helper()
	var got []map[string]any
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("stdout closed before response %d", id)
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				c.t.Fatalf("stdout line is not JSON: %q", line)
			}
			got = append(got, m)
			if v, ok := m["id"].(float64); ok && int(v) == id {
				return got
			}
		case <-time.After(20 * time.Second):
			c.t.Fatalf("no response %d", id)
		}
	}
}

func resultText(t *testing.T, msg map[string]any) string {
	t.Helper()
	res, ok := msg["result"].(map[string]any)
	if !ok {
		t.Fatalf("no result in %v", msg)
	}
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		t.Fatalf("content %v", res["content"])
	}
	text, _ := content[0].(map[string]any)["text"].(string)
	return text
}

func TestLegacy(t *testing.T) {
	c := startChild(t)
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	init := c.until(1)[0]["result"].(map[string]any)
	if v := init["protocolVersion"]; v != "2025-11-25" {
		t.Errorf("protocolVersion = %v", v)
	}
	if n := init["serverInfo"].(map[string]any)["name"]; n != "demo-test" {
		t.Errorf("serverInfo.name = %v, want demo-test (the --name flag)", n)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	if got := resultText(t, c.until(2)[0]); got != "hi" {
		t.Errorf("echo = %q", got)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40.5}}}`)
	if got := resultText(t, c.until(3)[0]); got != `{"sum":42.5}` {
		t.Errorf("add = %q", got)
	}

	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"slow_count","arguments":{"n":3,"delay_ms":1}}}`)
	msgs := c.until(4)
	if len(msgs) != 4 {
		t.Fatalf("got %d messages, want 3 progress notifications and the result: %v", len(msgs), msgs)
	}
	for i, m := range msgs[:3] {
		p := m["params"].(map[string]any)
		if m["method"] != "notifications/progress" || p["progressToken"] != "p" || p["progress"] != float64(i+1) || p["total"] != float64(3) {
			t.Errorf("progress %d = %v", i, m)
		}
	}
	if got := resultText(t, msgs[3]); got != "counted to 3" {
		t.Errorf("slow_count = %q", got)
	}

	// A long count is stopped by notifications/cancelled. Its handler
	// returns only when cancelled (the next step is a minute away), and the
	// SDK then still writes an isError result for the id.
	c.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"progressToken":"q"},"name":"slow_count","arguments":{"n":10000,"delay_ms":60000}}}`)
	var first map[string]any
	select {
	case line := <-c.lines: // the first progress notification: the call is running
		json.Unmarshal([]byte(line), &first)
	case <-time.After(20 * time.Second):
		t.Fatal("slow_count did not start")
	}
	if first["method"] != "notifications/progress" {
		t.Fatalf("want a progress notification, got %v", first)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":5}}`)
	if got := resultText(t, c.until(5)[0]); got != "context canceled" {
		t.Errorf("cancelled slow_count answered %q", got)
	}
	c.send(`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"demo://readme"}}`)
	contents := c.until(6)[0]["result"].(map[string]any)["contents"].([]any)
	if !strings.Contains(contents[0].(map[string]any)["text"].(string), "demo MCP server") {
		t.Errorf("readme = %v", contents)
	}

	c.send(`{"jsonrpc":"2.0","id":7,"method":"prompts/get","params":{"name":"review","arguments":{"code":"x := 1"}}}`)
	msg := c.until(7)[0]["result"].(map[string]any)["messages"].([]any)[0].(map[string]any)
	if text := msg["content"].(map[string]any)["text"].(string); !strings.HasSuffix(text, "x := 1") {
		t.Errorf("review prompt = %q", text)
	}
}

func TestModern(t *testing.T) {
	c := startChild(t)
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"t","version":"0"}}`
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`)
	res := c.until(1)[0]["result"].(map[string]any)
	versions, _ := res["supportedVersions"].([]any)
	if len(versions) == 0 || versions[0] != "2026-07-28" {
		t.Errorf("supportedVersions = %v", res["supportedVersions"])
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"echo","arguments":{"message":"modern"}}}`)
	m := c.until(2)[0]
	if got := resultText(t, m); got != "modern" {
		t.Errorf("echo = %q", got)
	}
	if rt := m["result"].(map[string]any)["resultType"]; rt != "complete" {
		t.Errorf("resultType = %v", rt)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{` + meta + `,"uri":"demo://echo/a%20b"}}`)
	contents := c.until(3)[0]["result"].(map[string]any)["contents"].([]any)
	if text := contents[0].(map[string]any)["text"]; text != "a b" {
		t.Errorf("demo://echo/a%%20b = %v", text)
	}
}
