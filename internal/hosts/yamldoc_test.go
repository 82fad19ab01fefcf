package hosts

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

func TestYAMLMalformed(t *testing.T) {
	for name, src := range map[string]string{
		"unclosed list": "GOOSE_MODEL: x\nextensions:\n  a:\n    args: [1, 2\n    cmd: x\n",
		"bad indent":    "extensions:\n  a:\n    cmd: x\n   args: []\n",
		"tab":           "extensions:\n\ta:\n",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := parseYAML([]byte(src))
			if err == nil || !strings.Contains(err.Error(), "not valid YAML: line ") {
				t.Fatalf("parse: %v, want an error naming the line", err)
			}
		})
	}
	if _, err := parseYAML([]byte("- a\n- b\n")); err == nil || !strings.Contains(err.Error(), "not a YAML mapping") {
		t.Fatalf("a list at the top: %v", err)
	}
	d, err := parseYAML([]byte("extensions: [a]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.entries(at("extensions")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("extensions as a list: %v", err)
	}
	d, _ = parseYAML([]byte("mcpServers:\n  - name: a\n  - just text\n"))
	if _, err := d.entries(serverMap{path: []string{"mcpServers"}, list: true}); err == nil || !strings.Contains(err.Error(), "mcpServers[1]") {
		t.Fatalf("a list item that is no mapping: %v", err)
	}
	for _, src := range []string{"", "# nothing yet\n", "extensions:\n", "extensions: {}\n"} {
		d, err := parseYAML([]byte(src))
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if es, err := d.entries(at("extensions")); err != nil || len(es) != 0 {
			t.Fatalf("%q: %d entries, %v", src, len(es), err)
		}
	}
}

// yamlCases are files with entries of every layout the editor meets.
var yamlCases = []struct {
	name string
	sm   serverMap
	src  string
}{
	{"goose", at("extensions"), readTestdata("testdata/goose/user.in")},
	{"continue", serverMap{path: []string{"mcpServers"}, list: true}, readTestdata("testdata/continue/user.in")},
	{"flow items", serverMap{path: []string{"mcpServers"}, list: true},
		"mcpServers:\n- {name: a, command: npx, args: [-y, 'x, y']}   # one line\n- {\n    name: b,\n    url: 'http://h/mcp'\n  }\n-\n  name: c\n  command: c\n"},
	{"comments between keys, no final new line", at("extensions"),
		"extensions:\n  a:\n    # what it runs\n    cmd: a   # from PATH\n\n# a comment further out\n    args:\n      - x\n    envs:\n      K: |\n        two\n        lines\n    enabled: true"},
	{"crlf", at("extensions"), "extensions:\r\n  a:\r\n    cmd: a\r\n    args: [x]\r\n    timeout: 300\r\n"},
	{"two documents", at("extensions"), "extensions:\n  a:\n    cmd: a\n---\nextensions: {}\n"},
}

func readTestdata(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return string(data)
}

// TestYAMLEntryText checks that an entry's text decodes to its fields and
// that restoring it changes nothing.
func TestYAMLEntryText(t *testing.T) {
	for _, c := range yamlCases {
		t.Run(c.name, func(t *testing.T) {
			d, err := parseYAML([]byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			es, err := d.entries(c.sm)
			if err != nil {
				t.Fatal(err)
			}
			if len(es) == 0 {
				t.Fatal("no entries")
			}
			for _, e := range es {
				v, err := decodeYAMLValue(e.text)
				if err != nil {
					t.Fatalf("%s: text %q: %v", e.name, e.text, err)
				}
				p, _ := json.Marshal(v)
				q, _ := json.Marshal(e.fields)
				if string(p) != string(q) {
					t.Fatalf("%s: text %q reads %s, fields are %s", e.name, e.text, p, q)
				}
				if err := d.restore(e, e.text); err != nil {
					t.Fatal(err)
				}
				if got := string(d.bytes()); got != c.src {
					t.Fatalf("%s: restoring its own text gave\n%s", e.name, got)
				}
			}
		})
	}
}

// TestYAMLRewrite rewrites every entry of each case and puts each back.
func TestYAMLRewrite(t *testing.T) {
	add := []member{{"type", "stdio"}, {"command", "/opt/mcpd/bin/mcpdctl"}, {"args", []string{"bridge", "--root", "${workspaceFolder}", "a b"}},
		{"env", map[string]string{"K": "true", "Z": "x: y"}}, {"on", true}}
	drop := func(k string) bool {
		return k == "cmd" || k == "command" || k == "args" || k == "url" || k == "type" || k == "env"
	}
	for _, c := range yamlCases {
		t.Run(c.name, func(t *testing.T) {
			d, _ := parseYAML([]byte(c.src))
			es, err := d.entries(c.sm)
			if err != nil {
				t.Fatal(err)
			}
			var orig []string
			for _, e := range es {
				orig = append(orig, e.text)
				before := e.fields
				if err := d.rewrite(e, drop, add); err != nil {
					t.Fatalf("%s: %v", e.name, err)
				}
				for k, v := range before {
					if drop(k) {
						continue
					}
					p, _ := json.Marshal(v)
					q, _ := json.Marshal(e.fields[k])
					if string(p) != string(q) {
						t.Fatalf("%s: %s was %s, is %s after the rewrite:\n%s", e.name, k, p, q, d.bytes())
					}
				}
				want := `{"K":"true","Z":"x: y"}`
				if got, _ := json.Marshal(e.fields["env"]); e.fields["command"] != "/opt/mcpd/bin/mcpdctl" || e.fields["on"] != true || string(got) != want {
					t.Fatalf("%s: rewritten to %v:\n%s", e.name, e.fields, d.bytes())
				}
				if args, _ := e.fields["args"].([]any); len(args) != 4 || args[3] != "a b" || args[2] != "${workspaceFolder}" {
					t.Fatalf("%s: args %v", e.name, e.fields["args"])
				}
			}
			// The rewritten file reads the same afresh.
			d2, err := parseYAML(d.bytes())
			if err != nil {
				t.Fatalf("the rewritten file: %v\n%s", err, d.bytes())
			}
			es2, err := d2.entries(c.sm)
			if err != nil || len(es2) != len(es) {
				t.Fatalf("the rewritten file: %d entries, %v", len(es2), err)
			}
			for i, e := range es2 {
				if err := d2.restore(e, orig[i]); err != nil {
					t.Fatal(err)
				}
			}
			if got := string(d2.bytes()); got != c.src {
				t.Fatalf("restored:\n%s\nwant:\n%s", got, c.src)
			}
		})
	}
}

func TestYAMLRewriteKeepsComments(t *testing.T) {
	src := "extensions:\n  a:\n    # runs a\n    cmd: a   # a comment\n    # the args\n    args:\n    - x\n\n    # kept\n    timeout: 300\n  b:\n    cmd: b\n"
	d, _ := parseYAML([]byte(src))
	es, _ := d.entries(at("extensions"))
	if err := d.rewrite(es[0], func(k string) bool { return k == "cmd" || k == "args" }, []member{{"uri", "http://127.0.0.1:6273/servers/a/mcp"}}); err != nil {
		t.Fatal(err)
	}
	want := "extensions:\n  a:\n    # runs a\n    uri: http://127.0.0.1:6273/servers/a/mcp\n    # the args\n\n    # kept\n    timeout: 300\n  b:\n    cmd: b\n"
	if got := string(d.bytes()); got != want {
		t.Fatalf("got:\n%s\nwant:\n%s", got, want)
	}
}

// TestYAMLRestoreOtherStyle puts back entries the user has since written
// in another style, holding the same values.
func TestYAMLRestoreOtherStyle(t *testing.T) {
	for _, c := range []struct {
		name      string
		sm        serverMap
		now, orig string
		want      string
	}{
		{"map entry now flow", at("extensions"), "extensions:\n  a: {cmd: b}\n  z: {}\n", "    cmd: a\n    args: [x]\n",
			"extensions:\n  a:\n    cmd: a\n    args: [x]\n  z: {}\n"},
		{"list item now flow", serverMap{path: []string{"s"}, list: true}, "s:\n  - {name: a, command: b}\n", "    name: a\n    command: a\n",
			"s:\n  - name: a\n    command: a\n"},
		{"flow entry now block", at("extensions"), "extensions:\n  a:\n    cmd: b\n  z: {}\n", "{cmd: a}",
			"extensions:\n  a:\n    {cmd: a}\n  z: {}\n"},
		{"indent changed", at("extensions"), "extensions:\n    a:\n        cmd: b\n        # c\n        args: []\n", "    cmd: a\n    # c\n    args: [x]\n",
			"extensions:\n    a:\n        cmd: a\n        # c\n        args: [x]\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, _ := parseYAML([]byte(c.now))
			es, err := d.entries(c.sm)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.restore(es[0], c.orig); err != nil {
				t.Fatal(err)
			}
			if got := string(d.bytes()); got != c.want {
				t.Fatalf("got:\n%s\nwant:\n%s", got, c.want)
			}
		})
	}
}

func TestYAMLScalar(t *testing.T) {
	for in, want := range map[string]string{
		"npx": "npx", "--root": "--root", "-y": "-y", "@playwright/mcp": `"@playwright/mcp"`,
		"http://127.0.0.1:6273/servers/a/mcp": "http://127.0.0.1:6273/servers/a/mcp",
		"true":                                `"true"`, "300": `"300"`, "": `""`, "a: b": `"a: b"`, "x, y": `"x, y"`, "#c": `"#c"`,
		"null": `"null"`, "~": `"~"`, " a": `" a"`, "it's": "it's", "${workspaceFolder}": `"${workspaceFolder}"`, "a\"b": `a"b`, "'a": `"'a"`,
		"line\nbreak": `"line\nbreak"`,
	} {
		if got := yamlScalar(in); got != want {
			t.Errorf("yamlScalar(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestGooseBuiltinUnsupported: Goose's own extensions are no servers.
func TestGooseBuiltinUnsupported(t *testing.T) {
	env, _ := testEnv(t)
	f := goose.Files(env)[0]
	writeFile(t, f.Path, []byte(readTestdata("testdata/goose/user.in")))
	o := mustOpen(t, goose, f)
	states := map[string]State{}
	for _, e := range o.Entries {
		states[e.Name] = e.State
		if e.State == Unsupported && e.Why == "" {
			t.Errorf("%s: unsupported with no reason", e.Name)
		}
	}
	want := map[string]State{"developer": Unsupported, "todo": Unsupported, "github": Direct, "context7": Direct,
		"time": Direct, "slack": Unsupported}
	for n, s := range want {
		if states[n] != s {
			t.Errorf("%s is %q, want %q", n, states[n], s)
		}
	}
	for _, e := range o.Entries {
		if e.Name == "developer" && !strings.Contains(e.Why, `"builtin"`) {
			t.Errorf("developer: %s", e.Why)
		}
		if e.Name == "time" && !e.Disabled {
			t.Error("time is enabled: false")
		}
		if e.Name == "context7" && (e.Server.URL != "https://mcp.context7.com/mcp" || e.Server.Headers["Authorization"] != "Bearer ctx7-example") {
			t.Errorf("context7: %+v", e.Server)
		}
		if e.Name == "github" && (e.Server.Command != "npx" || len(e.Server.Args) != 2 || e.Server.Env["GITHUB_PERSONAL_ACCESS_TOKEN"] == "") {
			t.Errorf("github: %+v", e.Server)
		}
	}
}

func TestContinueEntries(t *testing.T) {
	env, _ := testEnv(t)
	f := continueDev.Files(env)[0]
	writeFile(t, f.Path, []byte(readTestdata("testdata/continue/user.in")))
	o := mustOpen(t, continueDev, f)
	got := map[string]*Entry{}
	for _, e := range o.Entries {
		got[e.Name] = e
	}
	if len(got) != 4 {
		t.Fatalf("%d entries", len(got))
	}
	if d := got["Docs"]; d.State != Direct || d.Server.Transport != "http" || d.Server.Headers["X-Team"] != "platform" {
		t.Errorf("Docs: %s %+v", d.State, d.Server)
	}
	if g := got["GitHub"]; g.State != Unsupported || !strings.Contains(g.Why, "${{") {
		t.Errorf("GitHub: %s %s", g.State, g.Why)
	}
	if s := got["SQLite"]; s.State != Direct || s.Server.Env["SQLITE_READONLY"] != "true" || len(s.Server.Args) != 3 {
		t.Errorf("SQLite: %+v", s.Server)
	}
}

// TestContinueProjectBlocks: a project's .continue/mcpServers/*.yaml are
// files of its own.
func TestContinueProjectBlocks(t *testing.T) {
	env, _ := testEnv(t)
	writeFile(t, env.Project+"/.continue/mcpServers/playwright.yaml", []byte("name: Playwright\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: Browser\n    command: npx\n    args:\n      - \"@playwright/mcp@latest\"\n"))
	writeFile(t, env.Project+"/.continue/mcpServers/notes.txt", []byte("not a block"))
	files := continueDev.Files(env)
	if len(files) != 2 || files[1].Scope != "project" || files[1].Workspace != env.Project || !strings.HasSuffix(files[1].Path, "playwright.yaml") {
		t.Fatalf("files: %+v", files)
	}
	o := mustOpen(t, continueDev, files[1])
	if len(o.Entries) != 1 || o.Entries[0].Name != "Browser" || o.Entries[0].State != Direct {
		t.Fatalf("entries: %+v", o.Entries)
	}
}

// TestYAMLDisconnectAfterEdit: once the user has changed the file since
// connect, disconnect puts back each entry connect wrote and keeps the
// user's change.
func TestYAMLDisconnectAfterEdit(t *testing.T) {
	for _, c := range []struct {
		host      *Host
		in        string
		old, edit string
	}{
		{goose, "testdata/goose/user.in", "GOOSE_MODEL: claude-sonnet-4-5\n", "GOOSE_MODEL: claude-opus-4\n# switched model\n"},
		{continueDev, "testdata/continue/user.in", "rules:\n", "prompts:\n  - name: test\n    prompt: Write tests\n\nrules:\n"},
	} {
		t.Run(c.host.ID, func(t *testing.T) {
			env, store := testEnv(t)
			f := c.host.Files(env)[0]
			src := readTestdata(c.in)
			writeFile(t, f.Path, []byte(src))
			_, changes := connectAll(t, store, mustOpen(t, c.host, f))
			if len(changes) == 0 {
				t.Fatal("connect changed nothing")
			}
			cur := string(readFile(t, f.Path))
			if !strings.Contains(cur, c.old) {
				t.Fatalf("no %q in the connected file", c.old)
			}
			writeFile(t, f.Path, []byte(strings.Replace(cur, c.old, c.edit, 1)))
			res, err := store.Disconnect(mustOpen(t, c.host, f), false, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			if res.Whole || len(res.Restored) != len(changes) || len(res.Kept) != 0 {
				t.Fatalf("disconnect: whole %v, restored %v, kept %v", res.Whole, res.Restored, res.Kept)
			}
			want := strings.Replace(src, c.old, c.edit, 1)
			if got := string(readFile(t, f.Path)); got != want {
				t.Fatalf("disconnect left:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
