package hosts

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata")

// testMcpd is how the golden files reach mcpd.
var testMcpd = Mcpd{Ctl: "/opt/mcpd/bin/mcpdctl", HTTP: "http://127.0.0.1:6273"}

// TestGolden connects each host file of testdata/HOST/NAME.in (written
// where the host keeps its user config, or for a NAME other than "user"
// its file of that name) and compares the result with
// NAME.connected; a second connect changes nothing; disconnect gives back
// the input byte for byte.
func TestGolden(t *testing.T) {
	ins, _ := filepath.Glob("testdata/*/*.in")
	if len(ins) == 0 {
		t.Fatal("no golden inputs")
	}
	for _, in := range ins {
		id := filepath.Base(filepath.Dir(in))
		t.Run(id+"/"+strings.TrimSuffix(filepath.Base(in), ".in"), func(t *testing.T) {
			h := Find(id)
			if h == nil {
				t.Fatalf("no host %q", id)
			}
			src, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			env, store := testEnv(t)
			f := goldenFile(t, h, env, strings.TrimSuffix(filepath.Base(in), ".in"))
			writeFile(t, f.Path, src)
			o := mustOpen(t, h, f)
			after, changes := connectAll(t, store, o)
			golden := strings.TrimSuffix(in, ".in") + ".connected"
			if *update {
				if err := os.WriteFile(golden, after, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(after, want) {
				t.Fatalf("connect wrote:\n%s\nwant (%s):\n%s", after, golden, want)
			}
			if len(changes) == 0 {
				t.Fatal("connect changed no entry")
			}
			if again, ch := connectAll(t, store, mustOpen(t, h, f)); len(ch) != 0 || !bytes.Equal(again, after) {
				t.Fatalf("a second connect changed %d entries", len(ch))
			}
			res, err := store.Disconnect(mustOpen(t, h, f), false, time.Now())
			if err != nil || res == nil || !res.Whole {
				t.Fatalf("disconnect: %+v, %v", res, err)
			}
			if got := readFile(t, f.Path); digest(got) != digest(src) {
				t.Fatalf("disconnect left:\n%s\nwant the input byte for byte", got)
			}
		})
	}
}

// goldenFile is h's first file in env for "user", else its first file
// named name.
func goldenFile(t *testing.T, h *Host, env Env, name string) File {
	t.Helper()
	for _, f := range h.Files(env) {
		if name == "user" || strings.HasPrefix(name, "user-") || filepath.Base(f.Path) == name {
			return f
		}
	}
	t.Fatalf("%s has no file %q", h.ID, name)
	return File{}
}

func testEnv(t *testing.T) (Env, Store) {
	home := t.TempDir()
	return Env{Home: home, ConfigHome: filepath.Join(home, ".config"), Project: filepath.Join(home, "proj")},
		Store{Dir: filepath.Join(home, ".local", "state", "mcpd", "connect")}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustOpen(t *testing.T, h *Host, f File) *Opened {
	t.Helper()
	o, err := Open(h, f, testMcpd)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// connectAll points every direct entry of o at mcpd, under its own name,
// and commits the result when something changed.
func connectAll(t *testing.T, store Store, o *Opened) ([]byte, []Change) {
	t.Helper()
	targets := map[*Entry]Target{}
	for _, e := range o.Entries {
		if e.State == Direct {
			targets[e] = testMcpd.Target(o.Host, e.Name, e.Root())
		}
	}
	after, changes, err := o.Point(targets)
	if err != nil {
		t.Fatal(err)
	}
	if len(changes) == 0 {
		return after, nil
	}
	if _, err := store.Commit(o, after, changes, time.Now()); err != nil {
		t.Fatal(err)
	}
	return readFile(t, o.File.Path), changes
}
