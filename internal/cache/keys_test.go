package cache

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestKeys(t *testing.T) {
	same := [][2]string{
		{`{"cursor":"a","_meta":{"progressToken":1}}`, `{ "_meta": {"x":2}, "cursor": "a" }`},
		{``, `{}`},
		{`{"_meta":{}}`, `null`},
	}
	for _, p := range same {
		a, b := mustKey(t, "tools/list", p[0]), mustKey(t, "tools/list", p[1])
		if a != b {
			t.Errorf("keys of %s and %s differ: %q %q", p[0], p[1], a, b)
		}
	}
	if mustKey(t, "tools/list", `{"cursor":"a"}`) == mustKey(t, "tools/list", `{"cursor":"b"}`) {
		t.Error("different cursors share a key")
	}
	if mustKey(t, "tools/list", ``) == mustKey(t, "prompts/list", ``) {
		t.Error("different methods share a key")
	}
	l1, _ := ListKey("tools/list", []byte(`{"cursor":"a"}`))
	l2, _ := ListKey("tools/list", nil)
	if l1 != l2 || l1 == mustKey(t, "tools/list", "") {
		t.Errorf("list keys: %q %q", l1, l2)
	}
	if k := mustKey(t, "resources/read", `{"uri":"x://a","_meta":{}}`); k.Kind != KindRead || k.URI != "x://a" {
		t.Errorf("read key = %+v", k)
	}
	never := []struct{ method, params string }{
		{"tools/call", `{"name":"x"}`},
		{"prompts/get", `{"name":"x"}`},
		{"completion/complete", `{}`},
		{"resources/read", `{"uri":"x://a","inputResponses":{}}`},
		{"resources/read", `{"uri":"x://a","requestState":"s"}`},
		{"resources/read", `{}`},
		{"tools/list", `[1]`},
	}
	for _, n := range never {
		if _, err := NewKey(n.method, []byte(n.params)); !errors.Is(err, ErrNotCacheable) {
			t.Errorf("NewKey(%s, %s) err = %v, want ErrNotCacheable", n.method, n.params, err)
		}
	}
	if _, err := ListKey("resources/read", nil); !errors.Is(err, ErrNotCacheable) {
		t.Errorf("ListKey(resources/read) err = %v", err)
	}
}

func TestHints(t *testing.T) {
	tests := []struct {
		result   string
		ttl      time.Duration
		storable bool
	}{
		{`{"tools":[]}`, 0, true},
		{`{"resultType":"complete","ttlMs":1500}`, 1500 * time.Millisecond, true},
		{`{"resultType":"complete","ttlMs":0}`, 0, true},
		{`{"ttlMs":-5}`, 0, true},
		{`{"ttlMs":"soon"}`, 0, true},
		{`{"resultType":"input_required","ttlMs":1000}`, 0, false},
		{`{"resultType":"future"}`, 0, false},
		{`[]`, 0, false},
	}
	for _, tt := range tests {
		ttl, ok := Hints([]byte(tt.result))
		if ttl != tt.ttl || ok != tt.storable {
			t.Errorf("Hints(%s) = %v, %v; want %v, %v", tt.result, ttl, ok, tt.ttl, tt.storable)
		}
	}
}

func TestParsePolicy(t *testing.T) {
	for in, want := range map[string]Policy{
		"":       {},
		"never":  {Mode: ModeNever},
		"always": {Mode: ModeAlways},
		"90s":    {Mode: ModeTTL, TTL: 90 * time.Second},
	} {
		got, err := ParsePolicy(in)
		if err != nil || got != want || got.String() != strings.ReplaceAll(in, "90s", "1m30s") {
			t.Errorf("ParsePolicy(%q) = %+v, %v (%q)", in, got, err, got.String())
		}
	}
	for _, bad := range []string{"sometimes", "-1s", "0s"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) succeeded", bad)
		}
	}
}

func TestCovers(t *testing.T) {
	tests := []struct {
		sub, uri string
		want     bool
	}{
		{"x://a", "x://a", true},
		{"file:///p/", "file:///p/src/x", true},
		{"file:///p", "file:///p/src/x", true},
		{"file:///p", "file:///project", false},
		{"x://a?q", "x://a", false},
	}
	for _, tt := range tests {
		if got := covers(tt.sub, tt.uri); got != tt.want {
			t.Errorf("covers(%q, %q) = %v", tt.sub, tt.uri, got)
		}
	}
}

// BenchmarkHit is the cost of one cache hit (the Do call only).
func BenchmarkHit(b *testing.B) {
	c := New(Options{Policy: Policy{Mode: ModeAlways}})
	k, _ := ListKey("tools/list", nil)
	body := bytes.Repeat([]byte("x"), 16<<10)
	c.Do(context.Background(), k, func(context.Context) (Result, error) { return Result{Body: body}, nil })
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, src, _ := c.Do(context.Background(), k, nil); src != SourceHit {
				b.Fatal("miss")
			}
		}
	})
}

// A key scoped to one declaration is another key than the unscoped one
// and than one scoped to another declaration; "" leaves it as it is.
func TestKeyScoped(t *testing.T) {
	k, err := ListKey("tools/list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if k.Scoped("") != k {
		t.Error(`Scoped("") changed the key`)
	}
	a, b := k.Scoped("a"), k.Scoped("b")
	if a == k || a == b || a != k.Scoped("a") {
		t.Errorf("scoped keys %q %q %q", k, a, b)
	}
	if a.Kind != k.Kind {
		t.Errorf("scoping changed the kind: %v", a.Kind)
	}
}
