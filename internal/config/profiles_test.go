package config

import (
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/profile"
)

const profileServers = `"mcpServers": {"github": {"command": "/bin/true"}, "fs": {"command": "/bin/true"}, "prefix": {"command": "/bin/true"}}`

func TestParseProfiles(t *testing.T) {
	cfg, err := Parse("/c/config.json", []byte(`{`+profileServers+`,
	  "profiles": {
	    "coding": {
	      "prefix": "on-collision",
	      "github": {"tools": {"allow": ["get_*", "search"], "deny": ["get_secret"],
	                           "overrides": {"search": {"title": "Search", "description": "Find code."}}},
	                 "prompts": {"deny": ["*"]}},
	      "fs": {}
	    },
	    "odd": {"prefix": {"resources": {"allow": ["file:///docs/*"]}}},
	    "minimal": {"fs": {"tools": {"allow": []}}}
	  }}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Profiles.Names(); strings.Join(got, ",") != "coding,minimal,odd" {
		t.Fatalf("profiles = %v", got)
	}
	c := cfg.Profiles["coding"]
	if c.Prefix != profile.PrefixOnCollision {
		t.Errorf("prefix = %q", c.Prefix)
	}
	if got := strings.Join(c.ServerNames(), ","); got != "fs,github" {
		t.Errorf("servers = %s", got)
	}
	gh := c.Server("github")
	if !gh.Tools.Allows("get_file") || gh.Tools.Allows("get_secret") || gh.Tools.Allows("delete") || gh.Prompts.Allows("p") {
		t.Error("github rules wrong")
	}
	if ov := gh.Tools.Overrides["search"]; ov.Title == nil || *ov.Title != "Search" || *ov.Description != "Find code." {
		t.Errorf("override = %+v", ov)
	}
	if o := cfg.Profiles["odd"].Server("prefix"); o == nil || !o.Resources.Allows("file:///docs/x") || o.Resources.Allows("file:///x") {
		t.Error("a server named prefix is a server")
	}
	m := cfg.Profiles["minimal"]
	if m.Prefix != profile.PrefixAlways || m.Server("fs").Tools.Allows("x") || m.Server("github") != nil {
		t.Error("minimal profile wrong")
	}
}

func TestParseProfileErrors(t *testing.T) {
	cases := []struct{ profiles, want string }{
		{`{"p": {"githb": {}}}`, `key "profiles.p.githb": profile "p" names unknown server "githb", did you mean "github"?`},
		{`{"p": {"github": {"tools": {"allow": [""]}}}}`, `key "profiles.p.github.tools.allow[0]": empty pattern`},
		{`{"p": {"github": {"tools": {"deny": ["a\\b"]}}}}`, `a backslash escapes only`},
		{`{"p": {"github": {"tools": {"allow": "get_*"}}}}`, `want an array of name patterns, got string`},
		{`{"p": {"github": {"tools": {"allow": [3]}}}}`, `key "profiles.p.github.tools.allow[0]": want a string, got number`},
		{`{"p": {"github": {"tool": {}}}}`, `unknown key "tool", did you mean "tools"?`},
		{`{"p": {"github": {"tools": {"alow": []}}}}`, `unknown key "alow", did you mean "allow"?`},
		{`{"p": {"github": {"prompts": {"overrides": {}}}}}`, `unknown key "overrides"`},
		{`{"p": {"prefix": "sometimes", "github": {}}}`, `key "profiles.p.prefix": want one of "always", "on-collision", got "sometimes"`},
		{`{"p": {}}`, `profile "p" names no server`},
		{`{"p q": {"github": {}}}`, `invalid profile name`},
		{`{"p": {"github": {"tools": {"deny": ["x"], "overrides": {"x": {"title": "X"}}}}}}`, `override of tool "x", which this profile hides`},
		{`{"p": {"github": {"tools": {"overrides": {"x": {"name": "y"}}}}}}`, `unknown key "name"`},
		{`{"p": {"github": {"tools": {"overrides": {"x": {"title": 1}}}}}}`, `key "profiles.p.github.tools.overrides.x.title": want a string, got number`},
		{`{"p": {"github": []}}`, `must be a JSON object, got array`},
		{`[]`, `key "profiles": want an object, got array`},
	}
	for _, c := range cases {
		_, err := Parse("/c/config.json", []byte(`{`+profileServers+`, "profiles": `+c.profiles+`}`))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("profiles %s: err = %v, want %q", c.profiles, err, c.want)
		}
	}
}
