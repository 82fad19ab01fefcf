package config

import (
	"slices"
	"strings"
	"testing"
)

// "roots" is a boolean or a list of directories: absolute paths or
// file:// URIs, ${VAR} expanded, cleaned; a list turns the capability on.
func TestRootsKey(t *testing.T) {
	t.Setenv("MCPD_TEST_WS", "/home/u/work")
	tests := []struct {
		value string
		on    string // "nil", "true", "false"
		paths []string
		err   string
	}{
		{value: "", on: "nil"},
		{value: `true`, on: "true"},
		{value: `false`, on: "false"},
		{value: `[]`, on: "true", paths: []string{}},
		{value: `["/srv/a/", "${MCPD_TEST_WS}/proj", "file:///data/x%20y", "file://localhost/etc"]`, on: "true",
			paths: []string{"/srv/a", "/home/u/work/proj", "/data/x y", "/etc"}},
		{value: `["/ok", "rel/dir"]`, err: `key "roots[1]": "rel/dir" is not an absolute path`},
		{value: `["file://host/x"]`, err: `key "roots[0]": "file://host/x" is not a file:///absolute/path URI`},
		{value: `["/ok", 3]`, err: `key "roots[1]": want a string, got number`},
		{value: `"yes"`, err: `key "roots": want a boolean, got string`},
	}
	show := func(b *bool) string {
		if b == nil {
			return "nil"
		}
		if *b {
			return "true"
		}
		return "false"
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			extra := ""
			if tt.value != "" {
				extra = `, "roots": ` + tt.value
			}
			cfg, err := parseStrict("/etc/mcpd.json", []byte(`{"mcpServers": {"s": {"command": "x"`+extra+`}}}`))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := cfg.Servers[0]
			if got := show(s.Roots); got != tt.on {
				t.Errorf("Roots = %s, want %s", got, tt.on)
			}
			if !slices.Equal(s.RootPaths, tt.paths) || (s.RootPaths == nil) != (tt.paths == nil) {
				t.Errorf("RootPaths = %#v, want %#v", s.RootPaths, tt.paths)
			}
		})
	}
}

// A disabled server's roots are not expanded, so a ${VAR} root is no
// problem there until the server is enabled.
func TestRootsOfDisabledServerNotExpanded(t *testing.T) {
	cfg, err := parseStrict("/etc/mcpd.json", []byte(`{"mcpServers": {"s": {"command": "/bin/true", "disabled": true, "roots": ["${MCPD_TEST_UNSET_ROOT}/p"]}}}`))
	if err != nil {
		t.Fatalf("a disabled server's ${VAR} root: %v", err)
	}
	if got := cfg.Servers[0].RootPaths; len(got) != 1 || got[0] != "${MCPD_TEST_UNSET_ROOT}/p" {
		t.Errorf("root paths %q, want the entry as written", got)
	}
}
