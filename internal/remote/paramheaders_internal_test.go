package remote

import (
	"net/http"
	"strings"
	"testing"

	"go.uber.org/zap"
)

func TestToolParamHeaders(t *testing.T) {
	for _, tc := range []struct {
		schema string
		want   string // "" valid; else a piece of the error
	}{
		{`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`, ""},
		{`{"type":"object","properties":{"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"}}}`, ""},
		{`{"properties":{"v":{"type":"string","x-mcp-header":""}}}`, "empty"},
		{`{"properties":{"v":{"type":"object","x-mcp-header":"V"}}}`, "type"},
		{`{"properties":{"v":{"type":"array","x-mcp-header":"V"}}}`, "type"},
		{`{"properties":{"v":{"type":"null","x-mcp-header":"V"}}}`, "type"},
		{`{"properties":{"v":{"type":"number","x-mcp-header":"V"}}}`, "type"},
		{`{"properties":{"a":{"type":"string","x-mcp-header":"MyField"},"b":{"type":"string","x-mcp-header":"myfield"}}}`, "both"},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}`, "not allowed"},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"Region:Primary"}}}`, "not allowed"},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"Région"}}}`, "not allowed"},
		{`{"properties":{"v":{"type":"string","x-mcp-header":"Region\t1"}}}`, "not allowed"},
	} {
		_, err := toolParamHeaders([]byte(tc.schema))
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.schema, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want one saying %q", tc.schema, err, tc.want)
		}
	}
}

func TestParamHeadersOnToolsCall(t *testing.T) {
	c := &Conn{}
	list := `{"jsonrpc":"2.0","id":1,"result":{"tools":[` +
		`{"name":"ok","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"v":{"type":"boolean","x-mcp-header":"V"},"q":{"type":"string"}}}},` +
		`{"name":"bad","inputSchema":{"type":"object","properties":{"s":{"type":"number","x-mcp-header":"S"}}}}]}}`
	c.opts.Name = "r"
	c.log = zap.NewNop()
	out := string(c.filterTools([]byte(list)))
	if strings.Contains(out, `"bad"`) || !strings.Contains(out, `"ok"`) {
		t.Fatalf("filtered list: %s", out)
	}
	m, err := inspect([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ok","arguments":{"region":" eu ","n":5,"v":null,"q":"x"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	c.setParamHeaders(h, m)
	want := http.Header{"Mcp-Param-Region": {"=?base64?IGV1IA==?="}, "Mcp-Param-N": {"5"}}
	if len(h) != len(want) || h.Get("Mcp-Param-Region") != want.Get("Mcp-Param-Region") || h.Get("Mcp-Param-N") != "5" {
		t.Fatalf("headers %v, want %v", h, want)
	}
}
