package fakemcp_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestMain(m *testing.M) {
	fakemcp.Main()
	goleak.VerifyTestMain(m)
}

// child is a fake started with plain os/exec pipes.
type child struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout *bufio.Reader
}

func start(t *testing.T, mode string) *child {
	t.Helper()
	path, args := fakemcp.Command()
	cmd := exec.Command(path, args...)
	cmd.Env = fakemcp.Env(mode, "MCPD_FAKE_OVERSIZE=100")
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
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &child{t: t, cmd: cmd, stdin: stdin, stdout: bufio.NewReader(stdout)}
}

func (c *child) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		c.t.Fatal(err)
	}
}

// next returns the next JSON object line, skipping anything else.
func (c *child) next() map[string]json.RawMessage {
	c.t.Helper()
	for {
		line, err := c.stdout.ReadString('\n')
		if err != nil {
			c.t.Fatalf("read: %v", err)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal([]byte(strings.TrimSpace(line)), &m) == nil && m != nil && m["pad"] == nil {
			return m
		}
	}
}

const env = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func TestModernDiscoverAndEnvelope(t *testing.T) {
	c := start(t, "modern,garbage")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + env + `}}`)
	m := c.next()
	var res struct {
		ResultType        string   `json:"resultType"`
		SupportedVersions []string `json:"supportedVersions"`
		TTL               *int64   `json:"ttlMs"`
	}
	if err := json.Unmarshal(m["result"], &res); err != nil || res.ResultType != "complete" || res.TTL == nil ||
		strings.Join(res.SupportedVersions, ",") != fakemcp.DefaultVersions {
		t.Fatalf("discover = %s", m["result"])
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	if m := c.next(); !strings.Contains(string(m["error"]), "-32602") {
		t.Fatalf("no envelope: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	if m := c.next(); !strings.Contains(string(m["error"]), "-32022") {
		t.Fatalf("bad version: %v", m)
	}
}

func TestLegacyNeedsInitialize(t *testing.T) {
	c := start(t, "legacy")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + env + `}}`)
	if m := c.next(); !strings.Contains(string(m["error"]), "-32601") {
		t.Fatalf("discover: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := c.next(); m["error"] == nil {
		t.Fatalf("tools/list before initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := c.next(); !strings.Contains(string(m["result"]), `"serverInfo"`) {
		t.Fatalf("initialize: %v", m)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`)
	if m := c.next(); !strings.Contains(string(m["result"]), `"hi"`) || strings.Contains(string(m["result"]), "resultType") {
		t.Fatalf("echo: %v", m)
	}
}

func TestOutOfOrderAndCancel(t *testing.T) {
	c := start(t, "modern")
	c.send(`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{` + env + `,"name":"sleep","arguments":{"ms":600000}}}`)
	for i := 1; i <= 3; i++ {
		c.send(`{"jsonrpc":"2.0","id":` + string(rune('0'+i)) + `,"method":"tools/call","params":{` + env + `,"name":"outoforder","arguments":{"n":3}}}`)
	}
	for _, want := range []string{"3", "2", "1"} {
		if m := c.next(); string(m["id"]) != want {
			t.Fatalf("got id %s, want %s", m["id"], want)
		}
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":10}}`)
	c.send(`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{` + env + `,"name":"stats"}}`)
	m := c.next()
	if string(m["id"]) != "11" {
		t.Fatalf("cancelled sleep answered: %v", m)
	}
	var res struct {
		Content []struct{ Text string } `json:"content"`
	}
	_ = json.Unmarshal(m["result"], &res)
	var st fakemcp.Stats
	if err := json.Unmarshal([]byte(res.Content[0].Text), &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Cancelled) != 1 || string(st.Cancelled[0]) != "10" || st.Methods["tools/call"] != 5 {
		t.Fatalf("stats = %+v", st)
	}
}

func TestCrashOnStart(t *testing.T) {
	c := start(t, "crashonstart")
	err := c.cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("wait = %v, want exit status 3", err)
	}
}

// The chaos tools: a truncated line before the answer, a duplicate answer,
// numbered log messages.
func TestChaosTools(t *testing.T) {
	c := start(t, "modern")
	call := func(id, name, args string) {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + env + `,"name":"` + name + `","arguments":` + args + `}}`)
	}
	call("1", "truncated", `{"message":"tok1"}`)
	line, err := c.stdout.ReadString('\n')
	if err != nil || json.Valid([]byte(line)) || !strings.HasPrefix(line, `{"id":1,`) {
		t.Fatalf("first line %q (%v), want the start of the answer, cut off", line, err)
	}
	if m := c.next(); string(m["id"]) != "1" || !strings.Contains(string(m["result"]), `"tok1"`) {
		t.Fatalf("truncated: answer %v", m)
	}
	call("2", "twice", `{"message":"tok2"}`)
	for _, want := range []string{`"tok2"`, `"late tok2"`} {
		if m := c.next(); string(m["id"]) != "2" || !strings.Contains(string(m["result"]), want) {
			t.Fatalf("twice: answer %v, want %s", m, want)
		}
	}
	call("3", "logburst", `{"n":3,"start":5}`)
	for seq := 5; seq < 8; seq++ {
		m := c.next()
		if !strings.Contains(string(m["method"]), "notifications/message") || !strings.Contains(string(m["params"]), fmt.Sprintf(`{"seq":%d}`, seq)) {
			t.Fatalf("logburst: %v, want log message seq %d", m, seq)
		}
	}
	if m := c.next(); string(m["id"]) != "3" {
		t.Fatalf("logburst: %v, want the answer", m)
	}
}

// addtool changes tools/list and announces it before its own answer.
func TestAddToolChangesListBeforeAnswer(t *testing.T) {
	c := start(t, "legacy")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	c.next()
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"addtool","arguments":{"name":"extra1"}}}`)
	if m := c.next(); string(m["method"]) != `"notifications/tools/list_changed"` {
		t.Fatalf("first %v, want list_changed", m)
	}
	if m := c.next(); string(m["id"]) != "2" || m["error"] != nil {
		t.Fatalf("answer %v", m)
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := c.next(); !strings.Contains(string(m["result"]), `"name":"extra1"`) {
		t.Fatalf("tools/list after addtool: %s", m["result"])
	}
}

// A modern client is sent a task's status on the listen whose taskIds
// name it, tagged with its id, and nothing of a task it did not name.
func TestTaskStatusOnListen(t *testing.T) {
	c := start(t, "modern,tasks")
	taskID := func(id int) string {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"start_task","arguments":{}}}`, id, env))
		var res struct {
			TaskID string `json:"taskId"`
		}
		if m := c.next(); json.Unmarshal(m["result"], &res) != nil || res.TaskID == "" {
			t.Fatalf("start_task = %v", m)
		}
		return res.TaskID
	}
	named, other := taskID(1), taskID(2)
	c.send(`{"jsonrpc":"2.0","id":"L","method":"subscriptions/listen","params":{` + env + `,"notifications":{"taskIds":["` + named + `"]}}}`)
	if m := c.next(); string(m["method"]) != `"notifications/subscriptions/acknowledged"` {
		t.Fatalf("listen: %v", m)
	}
	for i, id := range []string{other, named} {
		c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"task_status","arguments":{"taskId":%q}}}`, 3+i, env, id))
	}
	var got []string
	for answered := 0; answered < 2; {
		m := c.next()
		if m["method"] == nil {
			answered++
			continue
		}
		if string(m["method"]) == `"notifications/tasks/status"` {
			got = append(got, string(m["params"]))
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], `"taskId":"`+named+`"`) || !strings.Contains(got[0], `"io.modelcontextprotocol/subscriptionId":"L"`) {
		t.Fatalf("statuses %v, want only %s's, tagged L", got, named)
	}
}
