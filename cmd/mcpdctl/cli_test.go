package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	"github.com/mcpd-dev/mcpd/internal/version"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Flags go before or after the positional arguments, global flags after
// the verb too, short flags take their value attached (-n5), and "--" ends
// the flags: every spelling gives the same transcript.
func TestFlagSpellings(t *testing.T) {
	_, sock := startFake(t)
	same := [][][]string{
		{{"--socket", sock, "status"}, {"status", "--socket", sock}, {"status", "--socket=" + sock}},
		{{"--socket", sock, "call", "weather", "forecast", "--json"}, {"--socket", sock, "call", "--json", "weather", "forecast"}, {"call", "weather", "forecast", "--socket", sock, "--json"}},
		{{"--socket", sock, "logs", "weather", "-n", "1"}, {"--socket", sock, "logs", "weather", "-n1"}, {"--socket", sock, "logs", "-n1", "weather"}, {"--socket", sock, "logs", "weather", "--lines=1"}, {"logs", "weather", "--lines", "1", "--socket", sock}},
		{{"--socket", sock, "status", "-q"}, {"status", "--quiet", "--socket", sock}},
	}
	for _, group := range same {
		want := mcpdctl(t, group[0]...)
		if want.code != exitOK {
			t.Fatalf("%q: exit %d: %s", group[0], want.code, want.stderr)
		}
		for _, args := range group[1:] {
			if got := mcpdctl(t, args...); got != want {
				t.Errorf("%q gives\n%+v\nbut %q gives\n%+v", args, got, group[0], want)
			}
		}
	}
	// After "--", a flag-like word is an argument: here a key=value pair.
	r := mcpdctl(t, "--socket", sock, "call", "notes", "echo", "--", "--json=x", "-n5=y")
	if want := `{"--json":"x","-n5":"y"}` + "\n"; r.code != exitOK || r.stdout != want {
		t.Errorf("call after --: exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	r = mcpdctl(t, "--socket", sock, "logs", "weather", "-n0")
	if r.code != exitUsage || !strings.HasPrefix(r.stderr, "mcpdctl logs: -n must be positive, not 0\n") {
		t.Errorf("logs -n0: exit %d, stderr %q", r.code, r.stderr)
	}
}

// Misspelt server, prompt and verb names get the closest name.
func TestDidYouMean(t *testing.T) {
	runGoldens(t, []goldenCase{
		{"call_unknown_server_near", []string{"call", "wether", "forecast"}},
		{"tools_unknown_near", []string{"tools", "note"}},
		{"prompt_unknown_near", []string{"prompt", "weather", "plan_trp"}},
	})
	r := mcpdctl(t, "--socket", "/nonexistent/mcpd.sock", "stauts")
	if want := "mcpdctl: unknown verb \"stauts\"; did you mean \"status\"?\n"; r.code != exitUsage || !strings.HasPrefix(r.stderr, want) {
		t.Errorf("stauts: exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, want)
	}
}

// typedMcpd is the fake mcpd with one more tool, "weather/typed", whose
// inputSchema types its arguments.
type typedMcpd struct{ *fakeMcpd }

const typedSchema = `{"type":"object","properties":{` +
	`"message":{"type":"string"},"n":{"type":"integer"},"x":{"type":"number"},"on":{"type":"boolean"},` +
	`"tags":{"type":"array"},"opts":{"type":"object"},"maybe":{"type":["integer","null"]},"free":{}}}`

func (f typedMcpd) ListTools(_ context.Context, r *mcpdv1.ListToolsRequest) (*mcpdv1.ListToolsResponse, error) {
	lists, err := serverLists(r.GetServer(), map[string]string{
		"weather": `[{"name":"typed","inputSchema":` + typedSchema + `}]`,
	})
	return &mcpdv1.ListToolsResponse{Servers: lists}, err
}

// key=value arguments take the types the tool's inputSchema gives them;
// properties it does not type are inferred as before.
func TestSchemaTypedArguments(t *testing.T) {
	f := &fakeMcpd{}
	sock := mcpdtest.Serve(t, typedMcpd{f})
	call := func(args ...string) (result, string) {
		t.Helper()
		r := mcpdctl(t, append([]string{"--socket", sock, "call", "weather", "typed"}, args...)...)
		f.mu.Lock()
		defer f.mu.Unlock()
		if len(f.calls) == 0 {
			return r, ""
		}
		return r, f.calls[len(f.calls)-1].GetArgumentsJson()
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"message=123", "n=5", "x=1.5", "on=true", `tags=["a",1]`, `opts={"k": 1}`}, `{"message":"123","n":5,"x":1.5,"on":true,"tags":["a",1],"opts":{"k":1}}`},
		{[]string{"message=true", "x=7", "n=1e3"}, `{"message":"true","x":7,"n":1e3}`},
		{[]string{"maybe=null", "free=5", "other=Paris"}, `{"maybe":null,"free":5,"other":"Paris"}`},
		{[]string{"maybe=3"}, `{"maybe":3}`},
		{[]string{`{"message": 123}`}, `{"message": 123}`}, // one JSON object is sent as it is
	}
	for _, tt := range tests {
		f.mu.Lock()
		f.calls = nil
		f.mu.Unlock()
		r, got := call(tt.args...)
		if got != tt.want {
			t.Errorf("%q: sent %s, want %s (exit %d, stderr %q)", tt.args, got, tt.want, r.code, r.stderr)
		}
	}
	bad := []struct {
		arg, want string
	}{
		{"n=five", `mcpdctl call: tool "typed" of server "weather": argument "n": "five" is not an integer, as the tool's inputSchema wants`},
		{"n=1.5", `mcpdctl call: tool "typed" of server "weather": argument "n": "1.5" is not an integer, as the tool's inputSchema wants`},
		{"x=abc", `mcpdctl call: tool "typed" of server "weather": argument "x": "abc" is not a number, as the tool's inputSchema wants`},
		{"on=yes", `mcpdctl call: tool "typed" of server "weather": argument "on": "yes" is not a boolean, as the tool's inputSchema wants`},
		{"tags=a,b", `mcpdctl call: tool "typed" of server "weather": argument "tags": "a,b" is not an array, as the tool's inputSchema wants`},
		{"opts=[1]", `mcpdctl call: tool "typed" of server "weather": argument "opts": "[1]" is not an object, as the tool's inputSchema wants`},
		{"maybe=x", `mcpdctl call: tool "typed" of server "weather": argument "maybe": "x" is not an integer or null, as the tool's inputSchema wants`},
	}
	for _, tt := range bad {
		f.mu.Lock()
		f.calls = nil
		f.mu.Unlock()
		r, sent := call(tt.arg)
		if first, _, _ := strings.Cut(r.stderr, "\n"); r.code != exitUsage || first != tt.want || sent != "" {
			t.Errorf("%s: exit %d, stderr %q, sent %q; want exit 2, nothing sent, and %q", tt.arg, r.code, r.stderr, sent, tt.want)
		}
	}
}

func TestTypedValue(t *testing.T) {
	var s inputSchema
	if err := json.Unmarshal([]byte(typedSchema), &s); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(s.propertyNames(), ","), "free,maybe,message,n,on,opts,tags,x"; got != want {
		t.Errorf("propertyNames = %s, want %s", got, want)
	}
	got, err := typedKeyValues([]string{"message=01234", "n=-7", "free=01234"}, &s)
	if want := `{"message":"01234","n":-7,"free":"01234"}`; err != nil || got != want {
		t.Errorf("typedKeyValues = %s, %v; want %s", got, err, want)
	}
	if _, err := typedKeyValues([]string{"n=1", "n=2"}, &s); err == nil {
		t.Error("a key given twice was accepted")
	}
}

// version prints mcpdctl's version and the daemon's, or that there is no
// daemon, and exits 0 either way.
func TestVersion(t *testing.T) {
	_, sock := startFake(t)
	r := mcpdctl(t, "--socket", sock, "version")
	want := "mcpdctl " + version.Version + "\nmcpd 1.0.0-test (pid 777, socket " + sock + ")\n"
	if r.code != exitOK || r.stdout != want || r.stderr != "" {
		t.Errorf("version: exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	missing := filepath.Join(t.TempDir(), "mcpd.sock")
	r = mcpdctl(t, "--socket", missing, "version")
	want = "mcpdctl " + version.Version + "\nmcpd is not running (no socket at " + missing + "); start it with: mcpd --socket " + missing + "\n"
	if r.code != exitOK || r.stdout != want || r.stderr != "" {
		t.Errorf("version without mcpd: exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	if r := mcpdctl(t, "--version"); r.code != exitOK || r.stdout != "mcpdctl "+version.Version+"\n" {
		t.Errorf("--version: %+v", r)
	}
}

// The not-running hint names the mcpd beside mcpdctl when mcpd is not on
// $PATH: relative to the working directory when below it.
func TestSiblingMcpd(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(bin, "mcpdctl")
	if got := siblingMcpd(self, dir); got != "mcpd" {
		t.Errorf("no mcpd beside mcpdctl: %q, want mcpd", got)
	}
	if err := os.WriteFile(filepath.Join(bin, "mcpd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := siblingMcpd(self, dir); got != "./bin/mcpd" {
		t.Errorf("below the working directory: %q, want ./bin/mcpd", got)
	}
	if got, want := siblingMcpd(self, "/"+"nowhere-else"), filepath.Join(bin, "mcpd"); got != want {
		t.Errorf("elsewhere: %q, want %q", got, want)
	}
}
