package hosts

import (
	"testing"
)

// editCases remove the entry named rm (if any) and insert "mcpd" with a
// URL in the map at sm.
var editCases = []struct {
	name   string
	format Format
	sm     serverMap
	src    string
	rm     string
	want   string
}{
	{"json last member, trailing comma", JSON, at("s"), "{\n\t\"s\": {\n\t\t\"a\": {\"x\": 1}, // a\n\t\t\"b\": {\"x\": 2}, // b\n\t},\n}\n", "b",
		"{\n\t\"s\": {\n\t\t\"a\": {\"x\": 1}, // a\n\t\t\"mcpd\": {\"url\": \"u\"},\n\t},\n}\n"},
	{"json first member, comments", JSON, at("s"), "{\n  \"s\": {\n    // about a\n    \"a\": {\n      \"x\": 1\n    },\n    \"b\": {\n      \"x\": 2\n    } // b\n  }\n}\n", "a",
		"{\n  \"s\": {\n    \"b\": {\n      \"x\": 2\n    }, // b\n    \"mcpd\": {\n      \"url\": \"u\"\n    }\n  }\n}\n"},
	{"json only member", JSON, at("s"), "{\"s\": {\"a\": {\"x\": 1}}, \"t\": 1}", "a",
		"{\"s\": {\"mcpd\": {\"url\": \"u\"}}, \"t\": 1}"},
	{"json absent map", JSON, at("mcpServers"), "{\n  \"theme\": \"dark\"\n}\n", "",
		"{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"mcpd\": {\n      \"url\": \"u\"\n    }\n  }\n}\n"},
	{"json null map", JSON, at("mcpServers"), "{\"mcpServers\": null}", "",
		"{\"mcpServers\": {\"mcpd\": {\"url\": \"u\"}}}"},
	{"json empty file", JSON, at("mcpServers"), "", "",
		"{\n  \"mcpServers\": {\n    \"mcpd\": {\n      \"url\": \"u\"\n    }\n  }\n}"},
	{"toml absent map", TOML, at("mcp_servers"), "model = \"o3\"\n", "",
		"model = \"o3\"\n\n[mcp_servers.mcpd]\nurl = \"u\"\n"},
	{"toml table with sub-table", TOML, at("mcp_servers"),
		"[mcp_servers.a]\ncommand = \"a\"\n\n[mcp_servers.a.env]\nK = \"v\"\n\n# about b\n[mcp_servers.b]\ncommand = \"b\"\n\n[tui]\nx = 1\n", "a",
		"# about b\n[mcp_servers.b]\ncommand = \"b\"\n\n[mcp_servers.mcpd]\nurl = \"u\"\n\n[tui]\nx = 1\n"},
	{"toml inline", TOML, at("mcp_servers"), "[mcp_servers]\na = { command = \"a\" } # a\nb = { command = \"b\" }\n\n[tui]\nx = 1\n", "a",
		"[mcp_servers]\nb = { command = \"b\" }\nmcpd = { url = \"u\" }\n\n[tui]\nx = 1\n"},
	{"yaml flow map", YAML, at("extensions"), "extensions: {a: {cmd: a}, b: {cmd: b}}\nx: 1\n", "a",
		"extensions: {b: {cmd: b}, mcpd: {url: u}}\nx: 1\n"},
	{"yaml flow list, last item", YAML, serverMap{path: []string{"s"}, list: true}, "s: [{name: a}, {name: b}]\n", "b",
		"s: [{name: a}, {name: mcpd, url: u}]\n"},
	{"yaml empty key", YAML, at("extensions"), "extensions:\nx: 1\n", "",
		"extensions:\n  mcpd:\n    url: u\nx: 1\n"},
	{"yaml empty flow", YAML, at("extensions"), "extensions: {}  # none yet\nx: 1\n", "",
		"extensions:  # none yet\n  mcpd:\n    url: u\nx: 1\n"},
	{"yaml absent list", YAML, serverMap{path: []string{"mcpServers"}, list: true}, "name: a\n", "",
		"name: a\nmcpServers:\n  - name: mcpd\n    url: u\n"},
	{"yaml block list item", YAML, serverMap{path: []string{"s"}, list: true}, "s:\n- name: a\n  command: a\n# b\n- name: b\n  command: b\n", "b",
		"s:\n- name: a\n  command: a\n- name: mcpd\n  url: u\n"},
}

func TestEditRemoveInsert(t *testing.T) {
	for _, c := range editCases {
		t.Run(c.name, func(t *testing.T) {
			d, err := parse(c.format, []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			if c.rm != "" {
				es, err := d.entries(c.sm)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range es {
					if e.name == c.rm {
						if err := d.remove(e); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			e, err := d.insert(c.sm.path, c.sm.list, "mcpd", []member{{"url", "u"}})
			if err != nil {
				t.Fatal(err)
			}
			if e.name != "mcpd" || e.fields["url"] != "u" {
				t.Errorf("inserted %q: %v", e.name, e.fields)
			}
			if got := string(d.bytes()); got != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, c.want)
			}
			if _, err := parse(c.format, d.bytes()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The JSON editor writes a key once, wherever it stood in the entry.
func TestEditJSONNoDuplicateKey(t *testing.T) {
	d, _ := parse(JSON, []byte(`{"s": {"a": {"timeout": 5, "url": "x"}}}`))
	es, _ := d.entries(at("s"))
	if err := d.rewrite(es[0], func(k string) bool { return false }, []member{{"url", "y"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := string(d.bytes()), `{"s": {"a": {"url": "y", "timeout": 5}}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}
