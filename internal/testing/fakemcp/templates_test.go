package fakemcp_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
)

func TestTemplatesFlag(t *testing.T) {
	c := start(t, "modern,templates")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + env + `}}`)
	if m := c.next(); !strings.Contains(string(m["result"]), `"completions":{}`) {
		t.Errorf("discover declares no completions: %s", m["result"])
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"resources/templates/list","params":{` + env + `}}`)
	if m := c.next(); !strings.Contains(string(m["result"]), `"uriTemplate":"`+fakemcp.GreetingTemplate+`"`) {
		t.Errorf("templates/list = %s", m["result"])
	}
	c.send(`{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{` + env +
		`,"ref":{"type":"ref/resource","uri":"` + fakemcp.GreetingTemplate + `"},"argument":{"name":"name","value":"a"}}}`)
	var res struct {
		Completion struct {
			Values []string `json:"values"`
		} `json:"completion"`
	}
	if m := c.next(); json.Unmarshal(m["result"], &res) != nil || strings.Join(res.Completion.Values, ",") != "ada,alan" {
		t.Errorf("complete = %s", m["result"])
	}
	c.send(`{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{` + env +
		`,"ref":{"type":"ref/resource","uri":"fake://other/{x}"},"argument":{"name":"name","value":""}}}`)
	if m := c.next(); !strings.Contains(string(m["error"]), "-32602") {
		t.Errorf("complete of an unknown template = %v", m)
	}
	c.send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{` + env + `,"uri":"fake://greeting/ada"}}`)
	if m := c.next(); !strings.Contains(string(m["result"]), `"hello ada"`) {
		t.Errorf("read = %s", m["result"])
	}
}

// Without the flag the fake lists no template and completes nothing.
func TestNoTemplatesByDefault(t *testing.T) {
	c := start(t, "modern")
	c.send(`{"jsonrpc":"2.0","id":1,"method":"resources/templates/list","params":{` + env + `}}`)
	if m := c.next(); !strings.Contains(string(m["result"]), `"resourceTemplates":[]`) {
		t.Errorf("templates/list = %s", m["result"])
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{` + env +
		`,"ref":{"type":"ref/resource","uri":"` + fakemcp.GreetingTemplate + `"},"argument":{"name":"name","value":""}}}`)
	if m := c.next(); !strings.Contains(string(m["error"]), "-32601") {
		t.Errorf("complete = %v", m)
	}
}
