package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/keyring"
)

// The literal values of secretsGemini, none of which may ever be printed.
const (
	ghValue     = "ghp_l1teralT0ken9f3a"
	notionValue = "ntn_b3arerV4lue77c1"
)

// secretsGemini is a Gemini CLI settings file with literal secrets: an env
// token of a command and a bearer header of a remote server.
const secretsGemini = `{
  "mcpServers": {
    "github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
               "env": {"GITHUB_TOKEN": "` + ghValue + `", "LOG_LEVEL": "debug", "FROM_ENV_TOKEN": "${GH}"}},
    "notion": {"httpUrl": "https://mcp.notion.example/mcp", "headers": {"Authorization": "Bearer ` + notionValue + `"}}
  }
}
`

// secretsHome is a connect home whose Gemini settings hold literal
// secrets.
func secretsHome(t *testing.T) *connectHome {
	t.Helper()
	h := newConnectHome(t)
	writeTestFile(t, h.gemini, secretsGemini)
	return h
}

func noValue(t *testing.T, what string, r result) {
	t.Helper()
	for _, v := range []string{ghValue, notionValue, strings.TrimPrefix(ghValue, "ghp_")} {
		if strings.Contains(r.stdout+r.stderr, v) {
			t.Errorf("%s printed a secret's value:\n%s%s", what, r.stdout, r.stderr)
		}
	}
}

// checkMoved checks mcpd's config names the secrets and that lookup finds
// their values.
func checkMoved(t *testing.T, h *connectHome, lookup func(name string) (string, error)) {
	t.Helper()
	servers := h.mcpdServers(t)
	if got := servers["github"].Env["GITHUB_TOKEN"]; got != "${secret:github_GITHUB_TOKEN}" {
		t.Errorf("github's GITHUB_TOKEN in mcpd's config = %q", got)
	}
	if got := servers["github"].Env["LOG_LEVEL"]; got != "debug" {
		t.Errorf("LOG_LEVEL = %q, want it kept", got)
	}
	if got := servers["github"].Env["FROM_ENV_TOKEN"]; got != "${GH}" {
		t.Errorf("FROM_ENV_TOKEN = %q, want the reference kept", got)
	}
	if got := servers["notion"].Headers["Authorization"]; got != "Bearer ${secret:notion_Authorization}" {
		t.Errorf("notion's Authorization in mcpd's config = %q", got)
	}
	cfg, _ := os.ReadFile(h.config)
	if strings.Contains(string(cfg), ghValue) || strings.Contains(string(cfg), notionValue) {
		t.Errorf("mcpd's config holds a value:\n%s", cfg)
	}
	for name, want := range map[string]string{"github_GITHUB_TOKEN": ghValue, "notion_Authorization": notionValue} {
		if got, err := lookup(name); err != nil || got != want {
			t.Errorf("lookup %s = %q, %v; want the value", name, got, err)
		}
	}
}

// TestConnectMoveSecretsKeyring: connect --move-secrets stores the literal
// secrets in the keyring (secret-tool finds them) and mcpd's config names
// them; --dry-run first shows the references and stores nothing; nothing
// printed holds a value.
func TestConnectMoveSecretsKeyring(t *testing.T) {
	k := keyring.Start(t)
	ctx := context.Background()
	h := secretsHome(t)
	useSecrets(t, k.Addr, "")
	before := h.sums(t)
	r := mcpdctl(t, "connect", "gemini", "--move-secrets", "--dry-run")
	if r.code != 0 {
		t.Fatalf("dry run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{`"GITHUB_TOKEN": "${secret:github_GITHUB_TOKEN}"`, `"Authorization": "Bearer ${secret:notion_Authorization}"`,
		`would move to ${secret:github_GITHUB_TOKEN}`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run lacks %s:\n%s", want, r.stdout)
		}
	}
	noValue(t, "connect --dry-run --move-secrets", r)
	if h.sums(t) != before {
		t.Fatal("--dry-run changed a file")
	}
	if _, err := k.Lookup(ctx, "github_GITHUB_TOKEN"); err == nil {
		t.Fatal("--dry-run stored a secret")
	}
	r = mcpdctl(t, "connect", "gemini", "--move-secrets")
	if r.code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noValue(t, "connect --move-secrets", r)
	if !strings.Contains(r.stdout, "stored github_GITHUB_TOKEN, notion_Authorization in Secret Service") {
		t.Errorf("connect does not say where the secrets went:\n%s", r.stdout)
	}
	checkMoved(t, h, func(name string) (string, error) { return k.Lookup(ctx, name) })
}

// TestConnectMoveSecretsFile: without a keyring the secrets go to the 0600
// file.
func TestConnectMoveSecretsFile(t *testing.T) {
	h := secretsHome(t)
	file := useSecrets(t, "unix:path="+filepath.Join(t.TempDir(), "nobus"), "")
	r := mcpdctl(t, "connect", "gemini", "--move-secrets")
	if r.code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noValue(t, "connect --move-secrets", r)
	if !strings.Contains(r.stdout, "in file "+file) {
		t.Errorf("connect does not name the file:\n%s", r.stdout)
	}
	st := openSecrets()
	defer st.Close()
	checkMoved(t, h, func(name string) (string, error) { return st.Get(context.Background(), name) })
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("secrets file: %v, %v", fi, err)
	}
}

// TestConnectMoveSecretsNames: a name already holding the same value is
// used again; one holding another value is skipped for NAME_2.
func TestConnectMoveSecretsNames(t *testing.T) {
	h := secretsHome(t)
	useSecrets(t, "unix:path="+filepath.Join(t.TempDir(), "nobus"), "")
	ctx := context.Background()
	st := openSecrets()
	defer st.Close()
	if err := st.Set(ctx, "github_GITHUB_TOKEN", ghValue); err != nil {
		t.Fatal(err)
	}
	if err := st.Set(ctx, "notion_Authorization", "another-value"); err != nil {
		t.Fatal(err)
	}
	r := mcpdctl(t, "connect", "gemini", "--move-secrets")
	if r.code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noValue(t, "connect --move-secrets", r)
	servers := h.mcpdServers(t)
	if got := servers["github"].Env["GITHUB_TOKEN"]; got != "${secret:github_GITHUB_TOKEN}" {
		t.Errorf("GITHUB_TOKEN = %q, want the stored name used again", got)
	}
	if got := servers["notion"].Headers["Authorization"]; got != "Bearer ${secret:notion_Authorization_2}" {
		t.Errorf("Authorization = %q, want a new name", got)
	}
	if got, _ := st.Get(ctx, "notion_Authorization"); got != "another-value" {
		t.Error("the other value was overwritten")
	}
	if got, _ := st.Get(ctx, "notion_Authorization_2"); got != notionValue {
		t.Error("notion_Authorization_2 does not hold the value")
	}
}

// TestConnectSecretsSuggested: without --move-secrets, connect names each
// literal secret in one line suggesting the flag, and stores nothing.
func TestConnectSecretsSuggested(t *testing.T) {
	secretsHome(t)
	file := useSecrets(t, "unix:path="+filepath.Join(t.TempDir(), "nobus"), "")
	r := mcpdctl(t, "connect", "gemini")
	if r.code != 0 {
		t.Fatalf("connect: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noValue(t, "connect", r)
	if n := strings.Count(r.stderr, "--move-secrets"); n != 2 {
		t.Errorf("%d lines suggest --move-secrets, want 2 (GITHUB_TOKEN, Authorization):\n%s", n, r.stderr)
	}
	if !strings.Contains(r.stderr, `env "GITHUB_TOKEN" is a literal secret`) || !strings.Contains(r.stderr, `header "Authorization" is a literal secret`) {
		t.Errorf("stderr:\n%s", r.stderr)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a secret was stored without --move-secrets: %v", err)
	}
}

// TestImportMoveSecrets: config import --move-secrets prints a config with
// the references, having stored the values; without it, a warning per
// secret.
func TestImportMoveSecrets(t *testing.T) {
	dir := t.TempDir()
	host := filepath.Join(dir, "claude_desktop_config.json")
	writeTestFile(t, host, `{"mcpServers": {"github": {"command": "npx", "env": {"GITHUB_TOKEN": "`+ghValue+`", "db_password": "`+notionValue+`"}}}}`)
	useSecrets(t, "unix:path="+filepath.Join(dir, "nobus"), "")
	t.Setenv("MCPD_CONFIG", filepath.Join(dir, "config.json"))
	r := mcpdctl(t, "config", "import", host)
	noValue(t, "config import's warnings", result{stderr: r.stderr}) // stdout is the config asked for
	if n := strings.Count(r.stderr, "--move-secrets"); n != 2 {
		t.Errorf("%d lines suggest --move-secrets, want 2:\n%s", n, r.stderr)
	}
	r = mcpdctl(t, "config", "import", host, "--move-secrets")
	noValue(t, "config import --move-secrets", r)
	for _, want := range []string{`"GITHUB_TOKEN": "${secret:github_GITHUB_TOKEN}"`, `"db_password": "${secret:github_db_password}"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("import lacks %s:\n%s%s", want, r.stdout, r.stderr)
		}
	}
	st := openSecrets()
	defer st.Close()
	if got, err := st.Get(context.Background(), "github_db_password"); err != nil || got != notionValue {
		t.Errorf("github_db_password = %q, %v", got, err)
	}
}
