package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcpd-dev/mcpd/internal/config"
	"github.com/mcpd-dev/mcpd/internal/supervisor"
	"github.com/mcpd-dev/mcpd/internal/testing/keyring"
	"github.com/mcpd-dev/mcpd/internal/testing/mcpdtest"
	"github.com/mcpd-dev/mcpd/internal/testing/registrytest"
)

// registryHome is a fresh HOME, state and config for the registry verbs,
// with no mcpd running; it returns the config path.
func registryHome(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("HOME", dir)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, ".config"))
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, ".local", "state"))
	t.Setenv("MCPD_SOCKET", filepath.Join(dir, "no-mcpd", "mcpd.sock"))
	cfg := filepath.Join(dir, ".config", "mcpd", "config.json")
	t.Setenv("MCPD_CONFIG", cfg)
	t.Setenv(envRegistry, "")
	// No Secret Service: secrets go to the 0600 file in the state directory.
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path="+filepath.Join(dir, "no-bus"))
	t.Setenv("XDG_RUNTIME_DIR", filepath.Join(dir, "run"))
	return cfg
}

// storedSecret is the value mcpdctl secret get --reveal shows for name.
func storedSecret(t *testing.T, name string) string {
	t.Helper()
	r := mcpdctl(t, "secret", "get", name, "--reveal")
	if r.code != exitOK {
		t.Errorf("secret get %s: exit %d\n%s", name, r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

// fakeNpx puts an npx first in PATH that runs mcp-server-memory of the
// repository's node_modules whatever the package (or fails when it is not
// installed); it reports whether the server is there to run.
func fakeNpx(t *testing.T) bool {
	t.Helper()
	bin, _ := filepath.Abs("../../node_modules/.bin/mcp-server-memory")
	_, err := os.Stat(bin)
	dir := t.TempDir()
	script := "#!/bin/sh\nexec " + bin + "\n"
	if err := os.WriteFile(filepath.Join(dir, "npx"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return err == nil
}

func TestRegistrySearch(t *testing.T) {
	registryHome(t)
	reg := registrytest.Serve(t)
	r := mcpdctl(t, "search", "--registry", reg.URL)
	if r.code != exitOK {
		t.Fatalf("search: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"io.github.domdomegg/airtable-mcp-server", "1.7.3", "io.skaphos/sting", "deprecated", "npm,oci,mcpb", "streamable-http,sse"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("search output lacks %q:\n%s", want, r.stdout)
		}
	}
	if n := reg.Hits("/v0.1/servers"); n != 3 {
		t.Errorf("%d page requests, want 3", n)
	}
	js := mcpdctl(t, "search", "sting", "--json", "--registry", reg.URL)
	if js.code != exitOK || !strings.Contains(js.stdout, `"transports": [`) || !strings.Contains(js.stdout, `"status": "active"`) {
		t.Errorf("search --json: exit %d\n%s%s", js.code, js.stdout, js.stderr)
	}

	// The registry gone and the answer three hours old: from the cache,
	// saying so.
	reg.Close()
	defer func(old func() time.Time) { timeNow = old }(timeNow)
	timeNow = func() time.Time { return fakeNow.Add(3 * time.Hour) }
	off := mcpdctl(t, "search", "--registry", reg.URL)
	if off.code != exitOK || !strings.Contains(off.stdout, "io.skaphos/sting") {
		t.Fatalf("offline search: exit %d\n%s%s", off.code, off.stdout, off.stderr)
	}
	if !strings.Contains(off.stderr, "cannot be reached") || !strings.Contains(off.stderr, "from the cache, 3 hour(s) old") {
		t.Errorf("offline search does not say how old:\n%s", off.stderr)
	}
	if miss := mcpdctl(t, "search", "nothing-cached", "--registry", reg.URL); miss.code != exitFailure || !strings.Contains(miss.stderr, reg.URL) {
		t.Errorf("uncached offline search: exit %d: %s", miss.code, miss.stderr)
	}
}

// TestRegistryAdd adds an npm server with a required secret, checks it as
// "config check" does, runs it through a real mcpd when node_modules has
// the server, and updates it after outdated sees a newer version.
func TestRegistryAdd(t *testing.T) {
	cfg := registryHome(t)
	reg := registrytest.Serve(t)
	runnable := fakeNpx(t)
	// Without the secret: the missing value is named, nothing is written.
	if r := mcpdctl(t, "add", "io.github.domdomegg/airtable-mcp-server@1.7.2", "--as", "air", "--registry", reg.URL); r.code != exitFailure ||
		!strings.Contains(r.stderr, "--var AIRTABLE_API_KEY=") {
		t.Fatalf("add without the secret: exit %d: %s", r.code, r.stderr)
	}
	r := mcpdctl(t, "add", "io.github.domdomegg/airtable-mcp-server@1.7.2", "--as", "air", "--var", "AIRTABLE_API_KEY=pat-secret", "--registry", reg.URL)
	if r.code != exitOK {
		t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `"AIRTABLE_API_KEY": "${secret:AIRTABLE_API_KEY}"`) || !strings.Contains(string(data), "airtable-mcp-server@1.7.2") ||
		strings.Contains(string(data), "pat-secret") {
		t.Errorf("config:\n%s", data)
	}
	if v := storedSecret(t, "AIRTABLE_API_KEY"); v != "pat-secret" {
		t.Errorf("stored secret %q, want the --var value", v)
	}
	if strings.Contains(r.stdout+r.stderr, "pat-secret") {
		t.Errorf("add printed the secret:\n%s%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "mcpd is not running") {
		t.Errorf("add output:\n%s", r.stdout)
	}

	// "config check" accepts it: the secret is resolved when the server starts.
	if chk := mcpdctl(t, "config", "check", cfg); chk.code != exitOK {
		t.Errorf("config check: exit %d\n%s%s", chk.code, chk.stdout, chk.stderr)
	}

	if runnable {
		loaded, err := config.Load(context.Background(), cfg)
		if err != nil || len(loaded.Servers) != 1 {
			t.Fatalf("load: %v", err)
		}
		sock := mcpdtest.StartSpecs(t, []supervisor.Spec{supervisor.Spec(loaded.Servers[0])})
		tools := mcpdctl(t, "--socket", sock, "tools", "air")
		if tools.code != exitOK || !strings.Contains(tools.stdout, "create_entities") {
			t.Errorf("tools air through mcpd: exit %d\n%s%s", tools.code, tools.stdout, tools.stderr)
		}
	} else {
		t.Log("node_modules/.bin/mcp-server-memory absent: not run through mcpd")
	}

	out := mcpdctl(t, "outdated", "--json")
	if out.code != exitOK || !strings.Contains(out.stdout, `"current": "1.7.2"`) || !strings.Contains(out.stdout, `"latest": "1.7.3"`) {
		t.Fatalf("outdated: exit %d\n%s%s", out.code, out.stdout, out.stderr)
	}
	up := mcpdctl(t, "add", "io.github.domdomegg/airtable-mcp-server@latest", "--as", "air", "--registry", reg.URL)
	if up.code != exitOK {
		t.Fatalf("update: exit %d\n%s%s", up.code, up.stdout, up.stderr)
	}
	data, _ = os.ReadFile(cfg)
	if !strings.Contains(string(data), "airtable-mcp-server@1.7.3") || strings.Count(string(data), `"air"`) != 1 {
		t.Errorf("updated config:\n%s", data)
	}
	if out := mcpdctl(t, "outdated"); !strings.Contains(out.stdout, "at its latest version") {
		t.Errorf("outdated after update:\n%s%s", out.stdout, out.stderr)
	}
	// A name add did not write is not replaced.
	if r := mcpdctl(t, "add", "io.github.domdomegg/time-mcp-pypi", "--as", "air", "--registry", reg.URL); r.code != exitFailure {
		t.Errorf("add over another server: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestRegistryAddDeprecated(t *testing.T) {
	cfg := registryHome(t)
	reg := registrytest.Serve(t)
	fakeNpx(t)
	r := mcpdctl(t, "add", "io.github.example/old-weather", "--var", "WEATHER_API_KEY=x", "--registry", reg.URL)
	if r.code != exitFailure || !strings.Contains(r.stderr, "is deprecated in the registry: Use weather-v2 instead for new projects") {
		t.Errorf("exit %d: %s", r.code, r.stderr)
	}
	if _, err := os.Stat(cfg); err == nil {
		t.Error("a config was written")
	}
}

// TestRegistryAddRemote adds a remote server (no npx in PATH) whose
// required secret header lands in the secret store, not the config.
func TestRegistryAddRemote(t *testing.T) {
	cfg := registryHome(t)
	reg := registrytest.Serve(t)
	t.Setenv("PATH", t.TempDir())
	dry := mcpdctl(t, "add", "io.modelcontextprotocol.anonymous/hybrid-mcp", "--var", "X-API-Key=k-123", "--dry-run", "--registry", reg.URL)
	if dry.code != exitOK || !strings.Contains(dry.stdout, `"X-API-Key": "${secret:HYBRID_MCP_X_API_KEY}"`) || strings.Contains(dry.stdout, "k-123") {
		t.Fatalf("dry run: exit %d\n%s%s", dry.code, dry.stdout, dry.stderr)
	}
	if _, err := os.Stat(cfg); err == nil {
		t.Fatal("--dry-run wrote the config")
	}
	r := mcpdctl(t, "add", "io.modelcontextprotocol.anonymous/hybrid-mcp", "--var", "X-API-Key=k-123", "--registry", reg.URL)
	if r.code != exitOK {
		t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, _ := os.ReadFile(cfg)
	if !strings.Contains(string(data), `"url": "https://mcp.anonymous.modelcontextprotocol.io/http"`) || strings.Contains(string(data), "k-123") {
		t.Errorf("config:\n%s", data)
	}
	if v := storedSecret(t, "HYBRID_MCP_X_API_KEY"); v != "k-123" {
		t.Errorf("stored secret %q", v)
	}
	if chk := mcpdctl(t, "config", "check", cfg); chk.code != exitOK {
		t.Errorf("config check: exit %d\n%s%s", chk.code, chk.stdout, chk.stderr)
	}
}

// TestRegistryAddSecretInKeyring: a required secret given to add lands in
// the desktop keyring, where secret-tool (an outside reader) finds it, and
// the config refers to it.
func TestRegistryAddSecretInKeyring(t *testing.T) {
	cfg := registryHome(t)
	k := keyring.Start(t)
	useSecrets(t, k.Addr, "")
	reg := registrytest.Serve(t)
	path := os.Getenv("PATH")
	t.Setenv("PATH", t.TempDir()) // no npx: the remote entry
	r := mcpdctl(t, "add", "io.modelcontextprotocol.anonymous/hybrid-mcp", "--var", "X-API-Key=k-keyring", "--registry", reg.URL)
	t.Setenv("PATH", path) // secret-tool
	if r.code != exitOK || !strings.Contains(r.stdout, "Secret Service") || strings.Contains(r.stdout+r.stderr, "k-keyring") {
		t.Fatalf("add: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, err := k.Lookup(context.Background(), "HYBRID_MCP_X_API_KEY"); err != nil || got != "k-keyring" {
		t.Fatalf("secret-tool lookup service mcpd name HYBRID_MCP_X_API_KEY = %q, %v", got, err)
	}
	if data, _ := os.ReadFile(cfg); !strings.Contains(string(data), "${secret:HYBRID_MCP_X_API_KEY}") || strings.Contains(string(data), "k-keyring") {
		t.Errorf("config:\n%s", data)
	}
}
