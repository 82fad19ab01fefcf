package hosts

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// aggregateCases are the golden inputs connect --aggregate is tried on,
// with a change of another setting the user makes after it.
var aggregateCases = []struct {
	in, old, edit string
}{
	{"testdata/claude-code/user.in", `"theme": "dark"`, `"theme": "light"`},
	{"testdata/claude-desktop/user.in", `"menuBarEnabled": false`, `"menuBarEnabled": true`},
	{"testdata/vscode/user.in", `"description": "GitHub PAT"`, `"description": "GitHub token"`},
	{"testdata/codex/user.in", `model = "gpt-5.1-codex"`, `model = "gpt-5.1-codex-mini"`},
	{"testdata/codex/user-inline.in", `model = "o3"`, `model = "o4"`},
	{"testdata/goose/user.in", "GOOSE_MODE: smart_approve", "GOOSE_MODE: auto"},
	{"testdata/continue/user.in", "name: Local Assistant", "name: My Assistant"},
}

// TestGoldenAggregate connects each file of aggregateCases with
// --aggregate and compares the result with NAME.aggregated; a second
// connect changes nothing; disconnect gives back the input byte for byte.
// Connected again and edited, disconnect puts back the removed entries
// and takes out the added one, keeping the edit (NAME.aggregate-undone).
func TestGoldenAggregate(t *testing.T) {
	for _, c := range aggregateCases {
		id := strings.Split(c.in, "/")[1]
		name := strings.TrimSuffix(strings.Split(c.in, "/")[2], ".in")
		t.Run(id+"/"+name, func(t *testing.T) {
			h := Find(id)
			src := readFile(t, c.in)
			env, store := testEnv(t)
			f := goldenFile(t, h, env, name)
			writeFile(t, f.Path, src)
			orig := mustOpen(t, h, f)
			after, changes := aggregateAll(t, store, mustOpen(t, h, f))
			checkGolden(t, strings.TrimSuffix(c.in, ".in")+".aggregated", after)
			if len(changes) == 0 {
				t.Fatal("connect --aggregate changed nothing")
			}
			o := mustOpen(t, h, f)
			var agg *Entry
			for _, e := range o.Entries {
				if e.State == Direct && e.Unaggregated() == "" {
					t.Errorf("%q is still direct", e.Name)
				}
				if e.Name == AggregateName {
					agg = e
				}
			}
			if agg == nil || !agg.IsAggregate() {
				t.Fatalf("no aggregate entry: %+v", agg)
			}
			if again, ch := aggregateAll(t, store, o); len(ch) != 0 || !bytes.Equal(again, after) {
				t.Fatalf("a second connect --aggregate changed %d entries", len(ch))
			}
			res, err := store.Disconnect(mustOpen(t, h, f), false, time.Now())
			if err != nil || res == nil || !res.Whole {
				t.Fatalf("disconnect: %+v, %v", res, err)
			}
			if got := readFile(t, f.Path); !bytes.Equal(got, src) {
				t.Fatalf("disconnect left:\n%s\nwant the input byte for byte", got)
			}

			aggregateAll(t, store, mustOpen(t, h, f))
			cur := string(readFile(t, f.Path))
			if !strings.Contains(cur, c.old) {
				t.Fatalf("no %q in the connected file", c.old)
			}
			writeFile(t, f.Path, []byte(strings.Replace(cur, c.old, c.edit, 1)))
			res, err = store.Disconnect(mustOpen(t, h, f), false, time.Now())
			if err != nil || res.Whole || len(res.Kept) != 0 || len(res.Restored) != len(changes) {
				t.Fatalf("disconnect after an edit: %+v, %v", res, err)
			}
			undone := readFile(t, f.Path)
			checkGolden(t, strings.TrimSuffix(c.in, ".in")+".aggregate-undone", undone)
			if !bytes.Contains(undone, []byte(c.edit)) {
				t.Errorf("the user's edit is gone:\n%s", undone)
			}
			sameEntries(t, orig, mustOpen(t, h, f))
		})
	}
}

// sameEntries checks that b has the entries of a, each with the same
// value, in any order.
func sameEntries(t *testing.T, a, b *Opened) {
	t.Helper()
	key := func(e *Entry) string { return where(e.Keys) + "/" + e.Name }
	want := map[string]string{}
	for _, e := range a.Entries {
		p, _ := json.Marshal(e.e.fields)
		want[key(e)] = string(p)
	}
	got := map[string]string{}
	for _, e := range b.Entries {
		p, _ := json.Marshal(e.e.fields)
		got[key(e)] = string(p)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s is %s, want %s", k, got[k], v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s is left", k)
		}
	}
}

func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("got:\n%s\nwant (%s):\n%s", got, golden, want)
	}
}

// aggregateAll replaces the direct entries of o by one "mcpd" entry, but
// those that keep an entry of their own, which it points at mcpd, and
// commits the result when something changed.
func aggregateAll(t *testing.T, store Store, o *Opened) ([]byte, []Change) {
	t.Helper()
	p := Plan{Point: map[*Entry]Target{}, Aggregate: map[*Entry]string{},
		Target: func(names []string) Target { return testMcpd.AggregateTarget(o.Host, names) }}
	for _, e := range o.Entries {
		switch {
		case e.State != Direct:
		case e.Unaggregated() != "":
			p.Point[e] = testMcpd.Target(o.Host, e.Name, e.Root())
		default:
			p.Aggregate[e] = e.Name
		}
	}
	after, changes, err := o.Apply(p)
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
