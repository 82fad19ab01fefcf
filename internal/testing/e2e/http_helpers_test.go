package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpd-dev/mcpd/internal/testing/tempdir"
)

// everythingJS is server-everything from npm, relative to the repository.
const everythingJS = "node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// requireNode is node when it and the npm packages are installed; the test
// is skipped otherwise, except in CI, where they must be.
func requireNode(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	_, serr := os.Stat(filepath.Join("..", "..", "..", everythingJS))
	_, terr := os.Stat(filepath.Join("..", "..", "..", "node_modules", "@modelcontextprotocol", "sdk"))
	if err != nil || serr != nil || terr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("node or the npm packages missing in CI (npm ci)")
		}
		t.Skip("node or the npm packages missing: run npm ci")
	}
	return node
}

// everythingServer is a config entry for server-everything on stdio.
func everythingServer(t *testing.T) map[string]any {
	node := requireNode(t)
	js, err := filepath.Abs(filepath.Join("..", "..", "..", everythingJS))
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"command": node, "args": []string{js, "stdio"}}
}

// startHTTPDaemon starts mcpd with the given raw config entries and its
// HTTP face on a free loopback port; it returns the face's base URL
// (http://127.0.0.1:PORT).
func startHTTPDaemon(t *testing.T, servers map[string]map[string]any) (*daemon, string) {
	t.Helper()
	bridgeBins(t)
	dir := tempdir.Short(t)
	data, err := json.Marshal(map[string]any{"mcpServers": servers})
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfg, data, 0o600); err != nil {
		t.Fatal(err)
	}
	d := spawnDaemon(t, filepath.Join(dir, "run", "mcpd.sock"), cfg, "--http-listen", "127.0.0.1:0")
	d.waitServing()
	urls, reason := httpStatus(t, d)
	if len(urls) == 0 || reason != "" {
		t.Fatalf("HTTP face not serving: %v %q", urls, reason)
	}
	base, ok := strings.CutSuffix(urls[0], "/mcp")
	if !ok {
		t.Fatalf("first HTTP URL %q is not the aggregate /mcp", urls[0])
	}
	return d, base
}

// npmJS is the absolute path of rel, a file of an npm package relative to
// the repository, with node to run it; the test is skipped when either is
// missing, except in CI, where npm ci installs them.
func npmJS(t *testing.T, rel string) (node, js string) {
	t.Helper()
	node = requireNode(t)
	js, err := filepath.Abs(filepath.Join("..", "..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(js); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s missing in CI (npm ci)", rel)
		}
		t.Skipf("%s missing: run npm ci", rel)
	}
	return node, js
}
