package profile

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	cases := []struct {
		pattern string
		yes     []string
		no      []string
	}{
		{"*", []string{"", "a", "a/b.c"}, nil},
		{"get_*", []string{"get_", "get_file", "get_a/b"}, []string{"get", "xget_file"}},
		{"*_secret", []string{"_secret", "read_secret"}, []string{"read_secrets"}},
		{"a*b*c", []string{"abc", "aXbYc", "abbc", "acbc"}, []string{"ab", "acb", "bac"}},
		{"ab*ba", []string{"abba", "abXba"}, []string{"aba"}},
		{"exact", []string{"exact"}, []string{"exactly", "xexact"}},
		{`lit\*`, []string{"lit*"}, []string{"lit", "litx"}},
		{`a\\b`, []string{`a\b`}, []string{"ab"}},
		{"**", []string{"", "x"}, nil},
		{"file:///docs/*", []string{"file:///docs/a.md", "file:///docs/sub/b"}, []string{"file:///etc/passwd"}},
	}
	for _, c := range cases {
		g, err := ParseGlob(c.pattern)
		if err != nil {
			t.Fatalf("ParseGlob(%q): %v", c.pattern, err)
		}
		for _, n := range c.yes {
			if !g.Match(n) {
				t.Errorf("%q should match %q", c.pattern, n)
			}
		}
		for _, n := range c.no {
			if g.Match(n) {
				t.Errorf("%q should not match %q", c.pattern, n)
			}
		}
	}
	if (Glob{}).Match("") {
		t.Error("the zero Glob matched")
	}
}

func TestParseGlobErrors(t *testing.T) {
	for _, p := range []string{"", `a\`, `a\b`} {
		if _, err := ParseGlob(p); err == nil {
			t.Errorf("ParseGlob(%q) = nil error", p)
		}
	}
}

func TestRulesAllows(t *testing.T) {
	r := Rules{HasAllow: true, Allow: []Glob{MustGlob("get_*"), MustGlob("list")}, Deny: []Glob{MustGlob("*_secret")}}
	for name, want := range map[string]bool{"get_x": true, "list": true, "get_secret": false, "delete": false} {
		if got := r.Allows(name); got != want {
			t.Errorf("Allows(%q) = %v, want %v", name, got, want)
		}
	}
	if !(&Rules{}).Allows("anything") {
		t.Error("empty rules hide")
	}
	if (&Rules{HasAllow: true}).Allows("x") {
		t.Error("an empty allow list shows")
	}
}

func TestFilterItems(t *testing.T) {
	desc := "Search, briefly."
	s := &Server{Tools: Rules{
		Deny:      []Glob{MustGlob("delete_*")},
		Overrides: map[string]Override{"search": {Description: &desc}},
	}}
	in := []byte(`[{"name":"search","description":"long text","inputSchema":{"type":"object"}},{"name":"delete_all"},{"name":"read"}]`)
	for range 2 { // the second time from the memo
		out, err := s.FilterItems("tools/list", in)
		if err != nil {
			t.Fatal(err)
		}
		var items []map[string]any
		if err := json.Unmarshal(out, &items); err != nil {
			t.Fatal(err)
		}
		if len(items) != 2 || items[0]["name"] != "search" || items[1]["name"] != "read" {
			t.Fatalf("items = %s", out)
		}
		if items[0]["description"] != desc || items[0]["inputSchema"] == nil {
			t.Fatalf("override not applied: %s", out)
		}
	}
	// Prompts have no rules: returned as they are.
	p := []byte(`[{"name":"x"}]`)
	if out, _ := s.FilterItems("prompts/list", p); string(out) != string(p) {
		t.Fatalf("open rules changed the list: %s", out)
	}
	if _, err := s.FilterItems("tools/list", []byte(`{"not":"an array"}`)); err == nil {
		t.Fatal("no error for items that are not an array")
	}
}

func TestFilterResourcesAndResult(t *testing.T) {
	s := &Server{Resources: Rules{HasAllow: true, Allow: []Glob{MustGlob("file:///docs/*")}}}
	out, err := s.FilterItems("resources/list", []byte(`[{"uri":"file:///docs/a","name":"a"},{"uri":"file:///etc/x","name":"docs"}]`))
	if err != nil || strings.Contains(string(out), "/etc/") || !strings.Contains(string(out), "/docs/a") {
		t.Fatalf("resources = %s, %v", out, err)
	}
	out, err = s.FilterItems("resources/templates/list", []byte(`[{"uriTemplate":"file:///docs/{p}"},{"uriTemplate":"db://{t}"}]`))
	if err != nil || strings.Contains(string(out), "db://") || !strings.Contains(string(out), "docs") {
		t.Fatalf("templates = %s, %v", out, err)
	}
	res, err := s.FilterResult("resources/list", []byte(`{"resources":[{"uri":"file:///etc/x"}],"nextCursor":"c"}`))
	if err != nil || string(res) != `{"nextCursor":"c","resources":[]}` {
		t.Fatalf("result = %s, %v", res, err)
	}
}

func TestParsePrefix(t *testing.T) {
	for in, want := range map[string]Prefix{"": PrefixAlways, "always": PrefixAlways, "on-collision": PrefixOnCollision} {
		if got, ok := ParsePrefix(in); !ok || got != want {
			t.Errorf("ParsePrefix(%q) = %q, %v", in, got, ok)
		}
	}
	if _, ok := ParsePrefix("never"); ok {
		t.Error(`ParsePrefix("never") ok`)
	}
}
