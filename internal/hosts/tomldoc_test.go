package hosts

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestTOMLMalformed(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"unclosed header", "model = \"o3\"\n\n[mcp_servers.a\ncommand = \"x\"\n", "line 3"},
		{"missing value", "[mcp_servers.a]\ncommand =\n", "line 2"},
		{"unterminated string", "a = 1\nb = 2\n[mcp_servers.a]\ncommand = \"npx\n", "line 4"},
		{"duplicate key", "[mcp_servers.a]\ncommand = \"x\"\ncommand = \"y\"\n", "line 3"},
		{"table twice", "[mcp_servers.a]\ncommand = \"x\"\n[mcp_servers.a]\nargs = []\n", "line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTOML([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), "not valid TOML: "+tc.want) {
				t.Fatalf("parseTOML: %v, want an error at %s", err, tc.want)
			}
		})
	}
}

// TestTOMLLayouts are the ways of writing servers the editor refuses,
// each with a message that says what to do.
func TestTOMLLayouts(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"dotted keys", "[mcp_servers]\nfs.command = \"npx\"\n", `write it as a [mcp_servers.fs] table`},
		{"root dotted keys", "mcp_servers.fs.command = \"npx\"\n", `write it as a [mcp_servers.fs] table`},
		{"array of tables", "[[mcp_servers.fs]]\ncommand = \"npx\"\n", "not an array of tables"},
		{"tables apart", "[mcp_servers.fs]\ncommand = \"npx\"\n[tui]\nanimations = false\n[mcp_servers.fs.env]\nA = \"b\"\n", "put its tables together"},
		{"sub-table first", "[mcp_servers.fs.env]\nA = \"b\"\n", "no [mcp_servers.fs] table"},
		{"not a table", "[mcp_servers]\nfs = \"npx\"\n", "must be a table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := parseTOML([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			_, err = doc.entries(at("mcp_servers"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("entries: %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCodexEntries(t *testing.T) {
	env, _ := testEnv(t)
	f := codex.Files(env)[0]
	writeFile(t, f.Path, readFile(t, "testdata/codex/user.in"))
	o := mustOpen(t, codex, f)
	got := map[string]*Entry{}
	for _, e := range o.Entries {
		got[e.Name] = e
	}
	want := map[string]Server{
		"memory": {Transport: "stdio", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-memory"},
			Env: map[string]string{"MEMORY_FILE_PATH": "/home/u/.memory.json"}},
		"github": {Transport: "http", URL: "https://api.githubcopilot.com/mcp/",
			Headers: map[string]string{"X-MCP-Toolsets": "repos,issues", "Authorization": "Bearer ${GITHUB_PAT}"}},
		"sentry":  {Transport: "stdio", Command: "uvx", Args: []string{"mcp-server-sentry"}, Env: map[string]string{"SENTRY_TOKEN": "s3cr3t"}},
		"docs":    {Transport: "stdio", Command: "docs-server", Args: []string{"--port", "4000"}, Cwd: "/home/u/code/docs"},
		"already": {Transport: "http", URL: "http://127.0.0.1:6273/servers/already/mcp"},
	}
	if len(got) != len(want) {
		t.Fatalf("entries %v, want %d", o.Entries, len(want))
	}
	for name, srv := range want {
		e := got[name]
		if e == nil || !reflect.DeepEqual(e.Server, srv) {
			t.Errorf("%s: %+v, want %+v", name, e, srv)
		}
	}
	if !got["sentry"].Disabled || got["memory"].Disabled {
		t.Error("enabled = false is not read as disabled")
	}
	if got["already"].State != Connected || got["docs"].State != Direct {
		t.Errorf("states: already %s, docs %s", got["already"].State, got["docs"].State)
	}
	// Fields are decoded as a JSON entry's are.
	fields := got["docs"].e.fields
	if v, ok := fields["tool_timeout_sec"].(float64); !ok || v != 30.5 {
		t.Errorf("tool_timeout_sec = %#v", fields["tool_timeout_sec"])
	}
	if v, ok := got["memory"].e.fields["startup_timeout_sec"].(int64); !ok || v != 20 {
		t.Errorf("startup_timeout_sec = %#v", got["memory"].e.fields["startup_timeout_sec"])
	}
	// A header from the environment replaces a static one of the same name.
	doc, err := parseTOML([]byte("[mcp_servers.s]\nurl = \"https://s/mcp\"\nhttp_headers = { authorization = \"Bearer old\", x-key = \"old\" }\n" +
		"env_http_headers = { X-Key = \"KEY\" }\nbearer_token_env_var = \"TOK\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	es, err := doc.entries(at("mcp_servers"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := codex.shape.decode(es[0].fields)
	if err != nil || !reflect.DeepEqual(srv.Headers, map[string]string{"Authorization": "Bearer ${TOK}", "X-Key": "${KEY}"}) {
		t.Errorf("headers %v, %v", srv.Headers, err)
	}
}

// TestTOMLRestore rewrites each entry and puts its text back: the file
// is the input byte for byte, line endings included.
func TestTOMLRestore(t *testing.T) {
	for _, in := range []string{"testdata/codex/user.in", "testdata/codex/user-inline.in", "crlf", "bare"} {
		t.Run(filepath.Base(in), func(t *testing.T) {
			var src []byte
			switch in {
			case "crlf":
				src = bytes.ReplaceAll(readFile(t, "testdata/codex/user.in"), []byte("\n"), []byte("\r\n"))
			case "bare": // headers alone, the last one ending the file
				src = []byte("[mcp_servers.a] # note\n  # kept\n\n[mcp_servers.b]\t")
			default:
				src = readFile(t, in)
			}
			doc, err := parseTOML(src)
			if err != nil {
				t.Fatal(err)
			}
			es, err := doc.entries(at("mcp_servers"))
			if err != nil {
				t.Fatal(err)
			}
			orig := make([]string, len(es))
			for i, e := range es {
				orig[i] = e.text
				add := []member{{"command", "/opt/mcpd/bin/mcpdctl"}, {"args", []string{"bridge", e.name}},
					{"env", map[string]string{"A B": "x\"y", "Z": "1"}}, {"enabled", true}}
				if err := doc.rewrite(e, codex.shape.drops, add); err != nil {
					t.Fatal(err)
				}
				f := e.fields
				if f["command"] != "/opt/mcpd/bin/mcpdctl" || f["enabled"] != true ||
					!reflect.DeepEqual(f["args"], []any{"bridge", e.name}) ||
					!reflect.DeepEqual(f["env"], map[string]any{"A B": "x\"y", "Z": "1"}) {
					t.Fatalf("%s rewritten to %q: %v", e.name, e.text, f)
				}
				if _, ok := f["url"]; ok {
					t.Fatalf("%s keeps its url: %q", e.name, e.text)
				}
			}
			out := doc.bytes()
			if in == "crlf" && bytes.Count(out, []byte("\n")) != bytes.Count(out, []byte("\r\n")) {
				t.Fatalf("a bare new line in a CRLF file:\n%q", out)
			}
			for i, e := range es {
				if err := doc.restore(e, orig[i]); err != nil {
					t.Fatal(err)
				}
			}
			if got := doc.bytes(); !bytes.Equal(got, src) {
				t.Fatalf("restored:\n%s\nwant:\n%s", got, src)
			}
		})
	}
}

// TestTOMLDisconnectAfterEdit changes the file after connect: disconnect
// puts back only the entries, and keeps the user's edits, an entry the
// user changed included.
func TestTOMLDisconnectAfterEdit(t *testing.T) {
	env, store := testEnv(t)
	f := codex.Files(env)[0]
	src := readFile(t, "testdata/codex/user.in")
	writeFile(t, f.Path, src)
	connected, changes := connectAll(t, store, mustOpen(t, codex, f))
	if len(changes) != 4 {
		t.Fatalf("%d changes", len(changes))
	}
	edit := func(b []byte, from, to string) []byte {
		t.Helper()
		if bytes.Count(b, []byte(from)) != 1 {
			t.Fatalf("%q is not once in the file", from)
		}
		return bytes.Replace(b, []byte(from), []byte(to), 1)
	}
	// The user sets another model and changes the docs server by hand.
	user := edit(connected, `model = "gpt-5.1-codex-mini"`, `model = "o4-mini"`)
	user = edit(user, "url = \"http://127.0.0.1:6273/servers/docs/mcp\"\n", "url = \"http://127.0.0.1:6273/servers/docs/mcp\"\nstartup_timeout_sec = 99\n")
	writeFile(t, f.Path, user)
	res, err := store.Disconnect(mustOpen(t, codex, f), false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Whole || len(res.Restored) != 3 || len(res.Kept) != 1 || !strings.Contains(res.Kept[0], `"docs"`) {
		t.Fatalf("restore: whole %v, restored %v, kept %v", res.Whole, res.Restored, res.Kept)
	}
	want := edit(src, `model = "gpt-5.1-codex-mini"`, `model = "o4-mini"`)
	want = edit(want, `[mcp_servers.docs]
command = "docs-server"
args = ["--port", "4000"]
cwd = "/home/u/code/docs"
env_vars = ["DOCS_API_KEY"]
`, `[mcp_servers.docs]
url = "http://127.0.0.1:6273/servers/docs/mcp"
startup_timeout_sec = 99
`)
	if got := readFile(t, f.Path); !bytes.Equal(got, want) {
		t.Fatalf("disconnect left:\n%s\nwant:\n%s", got, want)
	}
}

// TestTOMLBridge points entries at mcpdctl's bridge when mcpd has no HTTP
// face.
func TestTOMLBridge(t *testing.T) {
	src := "[mcp_servers.a]\nurl = \"https://a/mcp\"\nbearer_token_env_var = \"T\"\n[mcp_servers.a.http_headers]\nX = \"y\"\n\n[mcp_servers.b]\ncommand = \"b\""
	env, _ := testEnv(t)
	f := codex.Files(env)[0]
	writeFile(t, f.Path, []byte(src))
	o := mustOpen(t, codex, f)
	m := Mcpd{Ctl: "/opt/mcpd/bin/mcpdctl"}
	targets := map[*Entry]Target{}
	for _, e := range o.Entries {
		targets[e] = m.Target(codex, e.Name, "")
	}
	after, _, err := o.Point(targets)
	if err != nil {
		t.Fatal(err)
	}
	want := "[mcp_servers.a]\ncommand = \"/opt/mcpd/bin/mcpdctl\"\nargs = [\"bridge\", \"a\"]\n\n" +
		"[mcp_servers.b]\ncommand = \"/opt/mcpd/bin/mcpdctl\"\nargs = [\"bridge\", \"b\"]"
	if string(after) != want {
		t.Fatalf("connect wrote:\n%s\nwant:\n%s", after, want)
	}
}

func TestTOMLSameText(t *testing.T) {
	table := "[mcp_servers.fs]\ncommand = \"npx\" # npm\nargs = [\n  \"-y\",\n  \"fs\",\n]\nenabled = true\ntool_timeout_sec = 30\n\n[mcp_servers.fs.env]\nA = 'b'"
	for _, tc := range []struct {
		name string
		b    string
		same bool
	}{
		{"inline", `fs = { command = "npx", args = ["-y", "fs"], enabled = true, tool_timeout_sec = 30, env = { A = "b" } }`, true},
		{"dotted", "[mcp_servers.fs]\nargs = [\"-y\", \"fs\"]\ncommand = 'npx'\nenv.A = \"b\"\ntool_timeout_sec = 3_0\nenabled = true", true},
		{"root key", `mcp_servers.fs = { command = "npx", args = ["-y", "fs"], enabled = true, tool_timeout_sec = 30, env = { A = "b" } }`, true},
		{"other value", `fs = { command = "npx", args = ["-y", "fs"], enabled = false, tool_timeout_sec = 30, env = { A = "b" } }`, false},
		{"float", `fs = { command = "npx", args = ["-y", "fs"], enabled = true, tool_timeout_sec = 30.5, env = { A = "b" } }`, false},
		{"no env", `fs = { command = "npx", args = ["-y", "fs"], enabled = true, tool_timeout_sec = 30 }`, false},
		{"malformed", "[mcp_servers.fs\n", false},
	} {
		if got := sameText(TOML, table, tc.b); got != tc.same {
			t.Errorf("%s: sameText = %v, want %v", tc.name, got, tc.same)
		}
	}
	if sameText(TOML, "a = { x = nan }", "a = { x = nan }\n") {
		t.Error("nan is the same as nan")
	}
}

func TestCodexHome(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CODEX_HOME", dir)
	env, err := UserEnv("")
	if err != nil {
		t.Fatal(err)
	}
	if got := codex.Files(env)[0].Path; got != filepath.Join(dir, "config.toml") {
		t.Errorf("with CODEX_HOME: %s", got)
	}
	t.Setenv("CODEX_HOME", "")
	if env, err = UserEnv(""); err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	if got := codex.Files(env)[0].Path; got != filepath.Join(home, ".codex", "config.toml") {
		t.Errorf("without CODEX_HOME: %s", got)
	}
}
