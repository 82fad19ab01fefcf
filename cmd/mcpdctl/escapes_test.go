package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/apiclient"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/fakemcp"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	mcpdv1 "github.com/mcpd-dev/mcpd/proto/mcpd/v1"
)

// Terminal escapes a child and an app send: set the window title, clear
// the screen, colour text, ask the terminal to answer (C1 CSI).
const (
	escServerName = "evil\x1b]0;pwned\x07\x1b[2J"
	escStderr     = "oops \x1b[31mred\x1b[0m \u009b6n"
	escAppName    = "app\x1b[8mhidden"
)

// TestTerminalEscapesSanitized runs a real daemon with a fake child whose
// serverInfo.name and stderr carry escape sequences, and an app whose name
// does: status and logs (plain and -f) show them escaped, with no raw ESC
// or C1 byte; --json keeps the exact values.
func TestTerminalEscapesSanitized(t *testing.T) {
	cmd, args := fakemcp.Command()
	sock := mcpdtest.StartSpecs(t, []supervisor.Spec{{Name: "esc", Command: cmd, Args: args, Env: map[string]string{
		fakemcp.EnvMode: "dual,quiet", fakemcp.EnvName: escServerName, fakemcp.EnvStderr: escStderr,
	}}})
	// The app: its call names it, starts the server, and its connection
	// stays open so that status lists it.
	conn, err := apiclient.Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := mcpdv1.NewMcpdClient(conn).ListTools(t.Context(), &mcpdv1.ListToolsRequest{
		Server: "esc", Options: &mcpdv1.CallOptions{Client: &mcpdv1.ClientInfo{Name: escAppName, Version: "1"}},
	}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool {
		r := mcpdctl(t, "--socket", sock, "logs", "esc", "--json")
		return strings.Contains(r.stdout, "oops")
	})

	noRaw := func(t *testing.T, what, out string) {
		t.Helper()
		if strings.ContainsAny(out, "\x1b\x07\u009b") {
			t.Errorf("%s output has a raw control character:\n%q", what, out)
		}
	}
	r := mcpdctl(t, "--socket", sock, "status")
	for _, want := range []string{sanitize(escServerName) + " 1.0.0", "stderr: " + sanitize(escStderr), sanitize(escAppName)} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status does not show %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stdout, `evil\x1b]0;pwned\x07\x1b[2J`) || !strings.Contains(r.stdout, `\u009b6n`) {
		t.Errorf("status does not show the escapes as \\x1b, \\x07, \\u009b:\n%s", r.stdout)
	}
	noRaw(t, "status", r.stdout)

	r = mcpdctl(t, "--socket", sock, "logs", "esc")
	if !strings.Contains(r.stdout, `oops \x1b[31mred\x1b[0m \u009b6n`+"\n") {
		t.Errorf("logs does not show the escaped line:\n%s", r.stdout)
	}
	noRaw(t, "logs", r.stdout)

	// logs -f: the same line, escaped, until "Ctrl-C".
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncWriter
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"--socket", sock, "logs", "esc", "-f"}, &stdout, &stderr) }()
	waitUntil(t, func() bool { return strings.Contains(stdout.String(), sanitize(escStderr)) })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("logs -f after Ctrl-C: %v", err)
	}
	noRaw(t, "logs -f", stdout.String())

	// A tool's text result: escaped, newlines and tabs kept; --json exact.
	r = mcpdctl(t, "--socket", sock, "call", "esc", "echo", `{"message": "a\tb\n\u001b[2Jc"}`)
	if r.stdout != "a\tb\n\\x1b[2Jc\n" {
		t.Errorf("call output = %q, want the ESC escaped", r.stdout)
	}
	r = mcpdctl(t, "--socket", sock, "call", "esc", "echo", `{"message": "\u001b[2J"}`, "--json")
	if !strings.Contains(r.stdout, `\u001b[2J`) {
		t.Errorf("call --json = %q, want the exact JSON", r.stdout)
	}

	// --json: exact values.
	var st struct {
		Servers []struct {
			ServerInfo     struct{ Name string } `json:"server_info"`
			LastStderrLine string                `json:"last_stderr_line"`
		} `json:"servers"`
		Apps []struct{ Name string } `json:"apps"`
	}
	r = mcpdctl(t, "--socket", sock, "status", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	if len(st.Servers) != 1 || st.Servers[0].ServerInfo.Name != escServerName || st.Servers[0].LastStderrLine != escStderr {
		t.Errorf("status --json servers = %+v, want server_info.name %q and last_stderr_line %q", st.Servers, escServerName, escStderr)
	}
	found := false
	for _, a := range st.Apps {
		found = found || a.Name == escAppName
	}
	if !found {
		t.Errorf("status --json apps = %+v, want one named %q", st.Apps, escAppName)
	}
	var lines []struct{ Text string }
	r = mcpdctl(t, "--socket", sock, "logs", "esc", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &lines); err != nil {
		t.Fatalf("logs --json: %v\n%s", err, r.stdout)
	}
	if len(lines) == 0 || lines[len(lines)-1].Text != escStderr {
		t.Errorf("logs --json = %+v, want the last line %q", lines, escStderr)
	}
}
