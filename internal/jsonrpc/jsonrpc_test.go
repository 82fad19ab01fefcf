package jsonrpc

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

func TestAppendStringMatchesMarshal(t *testing.T) {
	for _, s := range []string{"", "tools/call", `a"b`, `back\slash`, "<tag>&", "tab\there", "café", "\xff", "\u2028"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendString([]byte("x"), s)
		if err != nil {
			t.Fatalf("AppendString(%q): %v", s, err)
		}
		if string(got) != "x"+string(want) {
			t.Errorf("AppendString(%q) = %s, want x%s", s, got, want)
		}
	}
}

func TestValidProgressToken(t *testing.T) {
	for tok, want := range map[string]bool{
		`"a"`: true, `7`: true, `-3`: true, `""`: true,
		``: false, `1.5`: false, `null`: false, `{}`: false, `"open`: false, `1e3`: false,
	} {
		if got := ValidProgressToken(json.RawMessage(tok)); got != want {
			t.Errorf("ValidProgressToken(%s) = %v, want %v", tok, got, want)
		}
	}
}

func TestErrorWire(t *testing.T) {
	data, err := json.Marshal(&Message{JSONRPC: Version, ID: json.RawMessage("3"),
		Error: UnsupportedVersion("1999-01-01", SupportedVersions())})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","id":3,"error":{"code":-32022,"message":"unsupported protocol version",` +
		`"data":{"requested":"1999-01-01","supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"]}}}`
	if string(data) != want {
		t.Errorf("got  %s\nwant %s", data, want)
	}
	if e := Errorf(CodeInvalidParams, "bad %s", "x"); e.Error() != "mcp error -32602: bad x" {
		t.Errorf("Error() = %q", e.Error())
	}
}

// The version lists are copies: a caller changing one cannot change
// what others see.
func TestVersionsAreCopies(t *testing.T) {
	v := LegacyVersions()
	v[0] = "changed"
	if LegacyVersions()[0] != LegacyVersion || SupportedVersions()[0] != ModernVersion {
		t.Fatalf("versions changed through a returned slice: %v", SupportedVersions())
	}
	if !slices.Contains(SupportedVersions(), "2024-11-05") {
		t.Fatalf("SupportedVersions() = %v", SupportedVersions())
	}
}

// TestDeps enforces that jsonrpc is a leaf: it imports only the standard
// library.
func TestDeps(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	out, err := exec.Command(goBin, "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if got := strings.Fields(string(out)); !slices.Equal(got, []string{"github.com/mcpd-dev/mcpd/internal/jsonrpc"}) {
		t.Errorf("jsonrpc depends on packages outside the standard library: %q", got)
	}
}
