package hosts

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// userFileOf writes data where h keeps its first user file in a fresh
// env and returns the file and the store.
func userFileOf(t *testing.T, h *Host, data string) (File, Store) {
	t.Helper()
	env, store := testEnv(t)
	f := h.Files(env)[0]
	writeFile(t, f.Path, []byte(data))
	return f, store
}

func entryNamed(t *testing.T, o *Opened, name string) *Entry {
	t.Helper()
	for _, e := range o.Entries {
		if e.Name == name {
			return e
		}
	}
	t.Fatalf("%s has no entry %q", o.File.Path, name)
	return nil
}

const editedIn = `{
  "theme": "dark",
  "mcpServers": {
    "memory": {
      "type": "stdio",
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-memory"]
    },
    "fetch": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-fetch"]
    },
    "time": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-time"]
    },
    "git": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-git"]
    }
  }
}
`

// A file edited between connect and disconnect gets back only the
// entries connect rewrote and the user left alone; the user's other
// changes stay, and so do the entries the user changed or removed.
func TestDisconnectAfterEdit(t *testing.T) {
	f, store := userFileOf(t, claudeCode, editedIn)
	after, changes := connectAll(t, store, mustOpen(t, claudeCode, f))
	if len(changes) != 4 {
		t.Fatalf("connect changed %d entries, want 4", len(changes))
	}
	fetchConnected := `"fetch": {
      "type": "http",
      "url": "http://127.0.0.1:6273/servers/fetch/mcp"
    }`
	fetchEdited := `"fetch": {
      "type": "http",
      "url": "http://127.0.0.1:6273/servers/fetch/mcp",
      "headers": { "X-Trace": "1" }
    }`
	gitConnected := `,
    "git": {
      "type": "http",
      "url": "http://127.0.0.1:6273/servers/git/mcp"
    }`
	edited := string(after)
	for _, r := range [][2]string{
		{`"theme": "dark"`, `"theme": "light"`}, // another setting
		{fetchConnected, fetchEdited},           // an entry connect wrote, changed since
		{gitConnected, ""},                      // one removed since
	} {
		if !strings.Contains(edited, r[0]) {
			t.Fatalf("connect wrote:\n%s\nwhich lacks %q", after, r[0])
		}
		edited = strings.Replace(edited, r[0], r[1], 1)
	}
	// The host reformats an entry it did not change: still connect's.
	edited = strings.Replace(edited, `"type": "http",
      "url": "http://127.0.0.1:6273/servers/time/mcp"`, `"type":"http","url":"http://127.0.0.1:6273/servers/time/mcp"`, 1)
	writeFile(t, f.Path, []byte(edited))

	res, err := store.Disconnect(mustOpen(t, claudeCode, f), false, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if res.Whole {
		t.Fatal("disconnect put back the whole backup over the user's changes")
	}
	want := strings.Replace(editedIn, `"theme": "dark"`, `"theme": "light"`, 1)
	want = strings.Replace(want, `"fetch": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-fetch"]
    }`, fetchEdited, 1)
	want = strings.Replace(want, `,
    "git": {
      "type": "stdio",
      "command": "uvx",
      "args": ["mcp-server-git"]
    }`, "", 1)
	if got := string(readFile(t, f.Path)); got != want {
		t.Fatalf("disconnect left:\n%s\nwant:\n%s", got, want)
	}
	if !slices.Equal(res.Restored, []string{`"memory" in mcpServers`, `"time" in mcpServers`}) {
		t.Errorf("restored %q", res.Restored)
	}
	if len(res.Kept) != 2 || !strings.Contains(res.Kept[0], `"fetch"`) || !strings.Contains(res.Kept[0], "changed since connect") ||
		!strings.Contains(res.Kept[1], `"git"`) || !strings.Contains(res.Kept[1], "removed since connect") {
		t.Errorf("kept %q", res.Kept)
	}
	if rec, err := store.Record(f.Path); err != nil || rec != nil {
		t.Errorf("record after disconnect: %v, %v", rec, err)
	}
}

// A file that is not valid JSON is named with the line of the fault, and
// nothing is written: not the file, not a record, not a backup.
func TestMalformedFile(t *testing.T) {
	bad := "{\n  \"mcpServers\": {\n    \"a\": { \"command\": \"x\" }\n    \"b\": { \"command\": \"y\" }\n  }\n}\n"
	f, store := userFileOf(t, cursor, bad)
	_, err := Open(cursor, f, testMcpd)
	if err == nil {
		t.Fatal("a malformed file opened")
	}
	for _, want := range []string{f.Path, "line 4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	opened, errs := Present(cursor, Env{Home: filepath.Dir(filepath.Dir(f.Path)), ConfigHome: t.TempDir()}, testMcpd)
	if len(opened) != 0 || len(errs) != 1 {
		t.Errorf("Present: %d opened, errors %v", len(opened), errs)
	}
	if got := readFile(t, f.Path); string(got) != bad {
		t.Errorf("the file changed:\n%s", got)
	}
	if _, err := os.Stat(store.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("connect state was written: %v", err)
	}
}

// A wrong kind of value is an error of the file, not of one entry.
func TestServersNotAnObject(t *testing.T) {
	f, _ := userFileOf(t, cursor, `{"mcpServers": ["a"]}`)
	if _, err := Open(cursor, f, testMcpd); err == nil || !strings.Contains(err.Error(), "mcpServers must be an object") {
		t.Fatalf("err = %v", err)
	}
}

// A read-only file is left as it is: Commit fails saying so, the record
// stays as it was (none when there was none), and no backup is made.
func TestReadOnlyFile(t *testing.T) {
	f, store := userFileOf(t, gemini, `{"mcpServers": {"a": {"command": "x"}}}`)
	if err := os.Chmod(f.Path, 0o444); err != nil {
		t.Fatal(err)
	}
	o := mustOpen(t, gemini, f)
	after, changes, err := o.Point(map[*Entry]Target{o.Entries[0]: testMcpd.Target(gemini, "a", "")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = store.Commit(o, after, changes, time.Now())
	if err == nil || !strings.Contains(err.Error(), f.Path) || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("Commit of a read-only file: %v", err)
	}
	if got := readFile(t, f.Path); !bytes.Equal(got, o.Data) {
		t.Errorf("the file changed:\n%s", got)
	}
	if rec, err := store.Record(f.Path); rec != nil || err != nil {
		t.Errorf("a record was left: %+v, %v", rec, err)
	}
	if _, err := os.Stat(filepath.Join(store.Dir, "backups")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a backup was made: %v", err)
	}

	// A file connect changed before, made read-only since: its record
	// stays byte for byte.
	if err := os.Chmod(f.Path, 0o644); err != nil {
		t.Fatal(err)
	}
	connectAll(t, store, mustOpen(t, gemini, f))
	rec := readFile(t, store.recordPath(f.Path))
	data := readFile(t, f.Path)
	writeFile(t, f.Path, bytes.Replace(data, []byte(`{"a":`), []byte(`{"b": {"command": "y"}, "a":`), 1))
	if err := os.Chmod(f.Path, 0o444); err != nil {
		t.Fatal(err)
	}
	data = readFile(t, f.Path)
	o = mustOpen(t, gemini, f)
	b := entryNamed(t, o, "b")
	after, changes, err = o.Point(map[*Entry]Target{b: testMcpd.Target(gemini, "b", "")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Commit(o, after, changes, time.Now()); err == nil {
		t.Fatal("Commit of a read-only file succeeded")
	}
	if got := readFile(t, f.Path); !bytes.Equal(got, data) {
		t.Errorf("the file changed:\n%s", got)
	}
	if got := readFile(t, store.recordPath(f.Path)); !bytes.Equal(got, rec) {
		t.Errorf("the record changed:\n%s\nwas:\n%s", got, rec)
	}
	if _, err := store.Disconnect(mustOpen(t, gemini, f), false, time.Now()); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("Disconnect of a read-only file: %v", err)
	}
}

// A config file linked from a dotfiles repository stays a link: the file
// it points to is the one rewritten, by connect and by disconnect.
func TestSymlinkedFile(t *testing.T) {
	env, store := testEnv(t)
	f := claudeCode.Files(env)[0]
	real := filepath.Join(env.Home, "dotfiles", "claude.json")
	src := []byte(`{"mcpServers": {"a": {"type": "stdio", "command": "x"}}}`)
	writeFile(t, real, src)
	if err := os.Symlink(filepath.Join("dotfiles", "claude.json"), f.Path); err != nil {
		t.Fatal(err)
	}
	isLink := func(when string) {
		t.Helper()
		fi, err := os.Lstat(f.Path)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s: %s is no longer a link (%v)", when, f.Path, err)
		}
	}
	after, _ := connectAll(t, store, mustOpen(t, claudeCode, f))
	isLink("after connect")
	if got := readFile(t, real); !bytes.Equal(got, after) || !bytes.Contains(got, []byte("/servers/a/mcp")) {
		t.Fatalf("the linked file holds:\n%s", got)
	}
	if res, err := store.Disconnect(mustOpen(t, claudeCode, f), false, time.Now()); err != nil || !res.Whole {
		t.Fatalf("disconnect: %+v, %v", res, err)
	}
	isLink("after disconnect")
	if got := readFile(t, real); !bytes.Equal(got, src) {
		t.Fatalf("the linked file holds:\n%s", got)
	}
}

// A VS Code server naming ${workspaceFolder} is tied to the workspace VS
// Code runs it in: it gets the bridge with --root ${workspaceFolder},
// which VS Code fills in, and mcpd's server has "." in its place.
func TestWorkspaceFolderEntry(t *testing.T) {
	f, _ := userFileOf(t, vscode, `{"servers": {
		"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "${workspaceFolder}", "${workspaceFolder}/docs"]},
		"time": {"command": "uvx", "args": ["mcp-server-time"]}
	}}`)
	o := mustOpen(t, vscode, f)
	fsEntry, timeEntry := entryNamed(t, o, "fs"), entryNamed(t, o, "time")
	if r := fsEntry.Root(); r != "${workspaceFolder}" {
		t.Errorf("Root = %q", r)
	}
	if r := timeEntry.Root(); r != "" {
		t.Errorf("a shared server has Root %q", r)
	}
	if got := fsEntry.Untied().Args; !slices.Equal(got, []string{"-y", "@modelcontextprotocol/server-filesystem", ".", "./docs"}) {
		t.Errorf("Untied args = %q", got)
	}
	tgt := testMcpd.Target(vscode, "fs", fsEntry.Root())
	if tgt.URL != "" || !slices.Equal(tgt.Args, []string{"bridge", "--root", "${workspaceFolder}", "fs"}) {
		t.Errorf("target = %+v", tgt)
	}
	after, _, err := o.Point(map[*Entry]Target{fsEntry: tgt})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(after, []byte(`"type": "stdio", "command": "/opt/mcpd/bin/mcpdctl", "args": ["bridge", "--root", "${workspaceFolder}", "fs"]`)) {
		t.Errorf("connect wrote:\n%s", after)
	}
}

// A Claude Code server of projects["/dir"] that names /dir is tied to
// that project; one that does not is shared.
func TestClaudeCodeProjectEntry(t *testing.T) {
	f, _ := userFileOf(t, claudeCode, `{
  "projects": {
    "/home/u/app": {
      "mcpServers": {
        "fs": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u/app", "/home/u/app/src"],
               "env": {"ROOT": "/home/u/app"}},
        "db": {"type": "stdio", "command": "uvx", "args": ["mcp-server-sqlite"], "cwd": "/home/u/app"},
        "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"]},
        "other": {"type": "stdio", "command": "cat", "args": ["/home/u/application"]}
      }
    }
  }
}`)
	o := mustOpen(t, claudeCode, f)
	fsEntry := entryNamed(t, o, "fs")
	if fsEntry.Workspace != "/home/u/app" || fsEntry.Where != `projects["/home/u/app"].mcpServers` {
		t.Errorf("workspace %q, where %q", fsEntry.Workspace, fsEntry.Where)
	}
	if r := fsEntry.Root(); r != "/home/u/app" {
		t.Errorf("Root = %q", r)
	}
	u := fsEntry.Untied()
	if !slices.Equal(u.Args, []string{"-y", "@modelcontextprotocol/server-filesystem", ".", "./src"}) || u.Env["ROOT"] != "." {
		t.Errorf("Untied = %+v", u)
	}
	if fsEntry.Server.Args[2] != "/home/u/app" {
		t.Error("Untied changed the entry's own server")
	}
	db := entryNamed(t, o, "db")
	if r, u := db.Root(), db.Untied(); r != "/home/u/app" || u.Cwd != "" {
		t.Errorf("db: Root %q, Untied cwd %q", r, u.Cwd)
	}
	for _, name := range []string{"time", "other"} {
		if r := entryNamed(t, o, name).Root(); r != "" {
			t.Errorf("%s: Root %q, want none", name, r)
		}
	}
	if tgt := testMcpd.Target(claudeCode, "fs", fsEntry.Root()); tgt.URL != "http://127.0.0.1:6273/servers/fs/mcp?root=%2Fhome%2Fu%2Fapp" {
		t.Errorf("target = %+v, want the HTTP door with the root", tgt)
	}
	if tgt := testMcpd.Target(claudeDesktop, "fs", fsEntry.Root()); !slices.Equal(tgt.Args, []string{"bridge", "--root", "/home/u/app", "fs"}) {
		t.Errorf("target of a host without HTTP = %+v, want the bridge with --root", tgt)
	}
}

// Zed's older entries, whose "command" was an object, are read as the
// newer ones, and rewritten in the newer form.
func TestZedOlderCommand(t *testing.T) {
	f, _ := userFileOf(t, zed, `{
  "context_servers": {
    "pg": {
      "command": {"path": "/usr/bin/pg-mcp", "args": ["--ro"], "env": {"PGHOST": "db"}},
      "settings": {}
    }
  }
}`)
	o := mustOpen(t, zed, f)
	e := entryNamed(t, o, "pg")
	if e.State != Direct || e.Server.Command != "/usr/bin/pg-mcp" || !slices.Equal(e.Server.Args, []string{"--ro"}) || e.Server.Env["PGHOST"] != "db" {
		t.Fatalf("entry = %+v (%s)", e, e.Why)
	}
	bridge := Mcpd{Ctl: testMcpd.Ctl}
	after, _, err := o.Point(map[*Entry]Target{e: bridge.Target(zed, "pg", "")})
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "context_servers": {
    "pg": {
      "command": "/opt/mcpd/bin/mcpdctl",
      "args": ["bridge", "pg"],
      "settings": {}
    }
  }
}`
	if string(after) != want {
		t.Fatalf("connect wrote:\n%s\nwant:\n%s", after, want)
	}
}

// A Cline remote entry without "type" is SSE unless its older
// "transportType" says "http".
func TestClineUntypedRemote(t *testing.T) {
	f, _ := userFileOf(t, cline, `{"mcpServers": {
		"a": {"url": "https://a.example.com/sse"},
		"b": {"url": "https://b.example.com/mcp", "transportType": "http"},
		"c": {"type": "streamableHttp", "url": "https://c.example.com/mcp"}
	}}`)
	o := mustOpen(t, cline, f)
	for name, want := range map[string]string{"a": "sse", "b": "http", "c": "http"} {
		if got := entryNamed(t, o, name).Server.Transport; got != want {
			t.Errorf("%s: transport %q, want %q", name, got, want)
		}
	}
}

// opencode's newer layout keeps its servers in "mcp"."servers"; that
// object is not a server of the older layout.
func TestOpencodeLayouts(t *testing.T) {
	f, _ := userFileOf(t, opencode, `{
  "mcp": {
    "servers": {"a": {"type": "local", "command": ["x", "-v"]}},
    "b": {"type": "remote", "url": "https://b.example.com/mcp"}
  }
}`)
	o := mustOpen(t, opencode, f)
	var names []string
	for _, e := range o.Entries {
		names = append(names, e.Where+"/"+e.Name+"/"+string(e.State))
	}
	if !slices.Equal(names, []string{"mcp/b/direct", "mcp.servers/a/direct"}) {
		t.Errorf("entries %q", names)
	}
	if a := entryNamed(t, o, "a"); a.Server.Command != "x" || !slices.Equal(a.Server.Args, []string{"-v"}) {
		t.Errorf("a = %+v", a.Server)
	}
}
