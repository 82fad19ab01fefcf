package main

import (
	"strings"
	"testing"

	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// A config diff names the profiles it adds, removes and changes; with
// nothing to apply it says so.
func TestPrintDiffProfiles(t *testing.T) {
	var b strings.Builder
	printDiff(&b, &mcpdv1.ConfigDiff{Unchanged: []string{"a"}, ProfilesAdded: []string{"new"},
		ProfilesRemoved: []string{"old"}, ProfilesChanged: []string{"dev", "ops"}}, true)
	want := "  would add profiles: new\n  would remove profiles: old\n  would change profiles: dev, ops\n"
	if b.String() != want {
		t.Errorf("printDiff =\n%s\nwant\n%s", b.String(), want)
	}
	b.Reset()
	printDiff(&b, &mcpdv1.ConfigDiff{Unchanged: []string{"a"}}, true)
	if !strings.Contains(b.String(), "no changes against the running config") {
		t.Errorf("printDiff of nothing = %q", b.String())
	}
}

// status names each profile's endpoint on a line of its own.
func TestPrintHTTPProfiles(t *testing.T) {
	var b strings.Builder
	printHTTP(&b, &mcpdv1.HttpStatus{Listen: "127.0.0.1:6273", Urls: []string{
		"http://127.0.0.1:6273/mcp", "http://127.0.0.1:6273/profiles/coding/mcp"}})
	want := "http http://127.0.0.1:6273/mcp (one server: /servers/NAME/mcp)\nhttp profile coding: http://127.0.0.1:6273/profiles/coding/mcp\n"
	if b.String() != want {
		t.Errorf("printHTTP =\n%s\nwant\n%s", b.String(), want)
	}
}
