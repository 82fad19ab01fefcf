package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/secrets"
	"github.com/mcpd-dev/mcpd/internal/testing/keyring"
)

// useSecrets points "mcpdctl secret" at a store on the bus addr with its
// fallback file in a temporary directory, and gives it stdin.
func useSecrets(t *testing.T, addr, stdin string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), secrets.FileName)
	oldOpen, oldStdin := openSecrets, secretStdin
	openSecrets = func() *secrets.Store {
		return secrets.Open(secrets.Options{BusAddress: addr, File: file})
	}
	secretStdin = strings.NewReader(stdin)
	t.Cleanup(func() { openSecrets, secretStdin = oldOpen, oldStdin })
	return file
}

// TestSecretVerbsKeyring: "secret set" stores what secret-tool, an outside
// reader, finds by service=mcpd name=NAME; get says it exists and prints
// it only with --reveal; ls names it and the backend; rm removes it.
func TestSecretVerbsKeyring(t *testing.T) {
	k := keyring.Start(t)
	const value = "sk-live-9f8e7d6c"
	useSecrets(t, k.Addr, value+"\n")
	r := mcpdctl(t, "secret", "set", "API_TOKEN")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "stored API_TOKEN in Secret Service (gnome-keyring") {
		t.Fatalf("set: %+v", r)
	}
	if got, err := k.Lookup(context.Background(), "API_TOKEN"); err != nil || got != value {
		t.Fatalf("secret-tool lookup service mcpd name API_TOKEN = %q, %v", got, err)
	}
	r = mcpdctl(t, "secret", "get", "API_TOKEN")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "API_TOKEN is set (Secret Service") || strings.Contains(r.stdout+r.stderr, value) {
		t.Errorf("get: %+v", r)
	}
	if r = mcpdctl(t, "secret", "get", "API_TOKEN", "--reveal"); r.code != 0 || r.stdout != value+"\n" {
		t.Errorf("get --reveal: %+v", r)
	}
	r = mcpdctl(t, "secret", "ls")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "# Secret Service (gnome-keyring") || !strings.HasSuffix(r.stdout, "\nAPI_TOKEN\n") {
		t.Errorf("ls: %+v", r)
	}
	if r = mcpdctl(t, "secret", "rm", "API_TOKEN"); r.code != 0 || r.stdout != "removed API_TOKEN\n" {
		t.Errorf("rm: %+v", r)
	}
	r = mcpdctl(t, "secret", "get", "API_TOKEN")
	if r.code != 1 || r.stderr != "mcpdctl: secret API_TOKEN not found (mcpdctl secret set API_TOKEN)\n" {
		t.Errorf("get after rm: %+v", r)
	}
}

// TestSecretVerbsNoBus: with no session bus the verbs use the 0600 file and
// say so.
func TestSecretVerbsNoBus(t *testing.T) {
	file := useSecrets(t, "unix:path=/nonexistent/mcpd-test-bus", "file-value\n")
	if r := mcpdctl(t, "secret", "set", "X"); r.code != 0 || !strings.HasPrefix(r.stdout, "stored X in file "+file+" (no session bus") {
		t.Fatalf("set: %+v", r)
	}
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file: %v %v", fi, err)
	}
	if r := mcpdctl(t, "secret", "ls"); r.code != 0 || !strings.HasPrefix(r.stdout, "# file "+file+" (no session bus: ") ||
		!strings.HasSuffix(r.stdout, ")\nX\n") {
		t.Errorf("ls: %+v", r)
	}
	if r := mcpdctl(t, "secret", "get", "X", "--reveal"); r.stdout != "file-value\n" {
		t.Errorf("get --reveal: %+v", r)
	}
}

func TestSecretUsage(t *testing.T) {
	useSecrets(t, "unix:path=/nonexistent/mcpd-test-bus", "")
	for _, tt := range []struct {
		args []string
		msg  string
	}{
		{[]string{"secret", "set"}, "set needs the secret's NAME"},
		{[]string{"secret", "set", "a b"}, `invalid name "a b": want 1 to 128 of A-Z a-z 0-9 _ . -`},
		{[]string{"secret", "ls", "X"}, "ls takes no NAME"},
		{[]string{"secret", "show", "X"}, `unknown secret action "show", want set, get, rm or ls`},
		{[]string{"secret", "set", "X", "--reveal"}, "--reveal is for get"},
	} {
		r := mcpdctl(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.msg) {
			t.Errorf("%v: %+v, want %q", tt.args, r, tt.msg)
		}
	}
	if r := mcpdctl(t, "secret", "set", "EMPTY"); r.code != 1 || !strings.Contains(r.stderr, "empty value") {
		t.Errorf("set from empty stdin: %+v", r)
	}
}

// TestSecretInArgsWarning: config check warns of a secret in args (ps
// shows a command line to everyone), not of one in env.
func TestSecretInArgsWarning(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "config.json")
	data := `{"mcpServers": {"s": {"command": "/bin/true", "args": ["--token=${secret:T}"], "env": {"E": "${secret:E}"}}}}`
	if err := os.WriteFile(cfg, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MCPD_SOCKET", filepath.Join(t.TempDir(), "none.sock"))
	r := mcpdctl(t, "config", "check", cfg)
	want := `warning: server "s": args[0]: ${secret:T} puts the secret on the command line, where ps shows it to every user; pass it in "env" instead` + "\n"
	if r.code != 0 || r.stderr != want {
		t.Errorf("config check: %+v\nwant stderr %q", r, want)
	}
}
